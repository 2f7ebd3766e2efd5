//! Keys that live only while their writer refreshes them: kube-apiserver's master leases
//! (`/masterleases/<ip>`, one per apiserver, each write granting a fresh etcd lease so the key
//! vanishes a TTL after its apiserver stops writing).

use super::EtcdStorage;
use crate::error::Result;
use etcd_client::PutOptions;
use std::time::Duration;

impl EtcdStorage {
    /// Puts `value` at `key` (under the prefix) on a new etcd lease of `ttl`.
    pub async fn put_with_ttl(&self, key: &str, value: Vec<u8>, ttl: Duration) -> Result<()> {
        let secs = i64::try_from(ttl.as_secs().max(1)).unwrap_or(i64::MAX);
        let mut lc = self.client.lease_client();
        let lease = self.call_plain("lease grant", lc.grant(secs, None)).await?;
        let mut kv = self.kv();
        let opts = PutOptions::new().with_lease(lease.id());
        self.call_plain("put", kv.put(self.full(key), value, Some(opts)))
            .await?;
        Ok(())
    }

    /// Removes `key` (under the prefix); absent is fine.
    pub async fn delete_key(&self, key: &str) -> Result<()> {
        let mut kv = self.kv();
        self.call_plain("delete", kv.delete(self.full(key), None))
            .await?;
        Ok(())
    }

    /// The keys (prefix and `prefix` stripped) and values under `prefix`, read linearizably.
    pub async fn get_prefixed(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let mut kv = self.kv();
        let opts = etcd_client::GetOptions::new().with_prefix();
        let full = self.full(prefix);
        let mut resp = self
            .call_plain("get", kv.get(full.clone(), Some(opts)))
            .await?;
        Ok(resp
            .take_kvs()
            .into_iter()
            .map(|kv| {
                let (k, v) = kv.into_key_value();
                let k = String::from_utf8_lossy(&k);
                (k.strip_prefix(full.as_str()).unwrap_or(&k).to_string(), v)
            })
            .collect())
    }
}
