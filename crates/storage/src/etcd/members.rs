//! Client-side failover between etcd members. The client balances requests over one
//! connection per member, but a member that dies after it was connected still looks ready to
//! the balancer: requests sent its way fail (`tcp connect error`) until it is back. So every
//! [`PROBE_INTERVAL`] each member's client address is dialled; one that refuses is taken out of
//! the balanced set (never the last one) and put back once it accepts connections again.

use etcd_client::Client;
use std::time::Duration;

const PROBE_INTERVAL: Duration = Duration::from_millis(500);
const DIAL_TIMEOUT: Duration = Duration::from_millis(500);

/// `host:port` of an endpoint URL such as `https://10.0.0.1:2379`.
fn authority(endpoint: &str) -> &str {
    let rest = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}

async fn reachable(endpoint: &str) -> bool {
    matches!(
        tokio::time::timeout(
            DIAL_TIMEOUT,
            tokio::net::TcpStream::connect(authority(endpoint))
        )
        .await,
        Ok(Ok(_))
    )
}

/// Runs for the life of the process (as the compactor does).
pub(super) async fn track_members(client: Client, endpoints: Vec<String>) {
    let mut in_set = vec![true; endpoints.len()];
    loop {
        tokio::time::sleep(PROBE_INTERVAL).await;
        for (i, endpoint) in endpoints.iter().enumerate() {
            let up = reachable(endpoint).await;
            let members_in = in_set.iter().filter(|s| **s).count();
            let Some(member) = in_set.get_mut(i) else {
                continue;
            };
            if !up && *member && members_in > 1 {
                match client.remove_endpoint(endpoint).await {
                    Ok(()) => {
                        tracing::warn!(endpoint = %endpoint, "etcd member unreachable: requests go to the others");
                        *member = false;
                    }
                    Err(e) => {
                        tracing::debug!(endpoint = %endpoint, error = %e, "etcd: removing a member")
                    }
                }
            } else if up && !*member {
                match client.add_endpoint(endpoint).await {
                    Ok(()) => {
                        tracing::info!(endpoint = %endpoint, "etcd member reachable again");
                        *member = true;
                    }
                    Err(e) => {
                        tracing::debug!(endpoint = %endpoint, error = %e, "etcd: adding a member back")
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn authority_of_endpoints() {
        assert_eq!(super::authority("http://127.0.0.1:2379"), "127.0.0.1:2379");
        assert_eq!(super::authority("https://etcd-0:2379/"), "etcd-0:2379");
        assert_eq!(super::authority("127.0.0.1:2379"), "127.0.0.1:2379");
    }
}
