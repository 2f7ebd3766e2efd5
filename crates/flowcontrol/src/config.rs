//! The parts of PriorityLevelConfiguration and FlowSchema objects the controller uses, read
//! with the API's defaults for fields left out, and checked as upstream's
//! `queueSetCompleterForPL` checks them (a broken level is ignored, as upstream ignores it).

use crate::bootstrap::EXEMPT;
use crate::shufflesharding::Dealer;
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};

/// `FlowSchemaDefaultMatchingPrecedence`.
pub const DEFAULT_MATCHING_PRECEDENCE: i32 = 1000;
/// `PriorityLevelConfigurationDefaultNominalConcurrencyShares`.
pub const DEFAULT_NOMINAL_CONCURRENCY_SHARES: i32 = 30;
/// `PriorityLevelConfigurationDefaultQueues`.
pub const DEFAULT_QUEUES: i32 = 64;
/// `PriorityLevelConfigurationDefaultHandSize`.
pub const DEFAULT_HAND_SIZE: i32 = 8;
/// `PriorityLevelConfigurationDefaultQueueLengthLimit`.
pub const DEFAULT_QUEUE_LENGTH_LIMIT: i32 = 50;

/// What a priority level does with requests (`fq.QueuingConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Never queued, never rejected (`DesiredNumQueues < 0`).
    Exempt,
    /// Rejected at once when no seat is free (`DesiredNumQueues == 0`).
    Reject,
    /// Queued with shuffle sharding.
    Queue {
        /// Number of queues.
        queues: i32,
        /// Queues per flow's hand.
        hand_size: i32,
        /// Requests that may wait in one queue.
        queue_length_limit: i32,
    },
}

impl Limit {
    /// `DesiredNumQueues`: -1 for exempt, 0 for reject, the queue count otherwise.
    pub fn desired_num_queues(&self) -> i32 {
        match self {
            Limit::Exempt => -1,
            Limit::Reject => 0,
            Limit::Queue { queues, .. } => *queues,
        }
    }
}

/// A priority level as the controller uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorityLevelSpec {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` (empty for an imagined mandatory level).
    pub uid: String,
    /// Exempt, reject or queue.
    pub limit: Limit,
    /// `nominalConcurrencyShares`.
    pub nominal_concurrency_shares: i32,
    /// `lendablePercent`.
    pub lendable_percent: Option<i32>,
    /// `borrowingLimitPercent` (never for exempt).
    pub borrowing_limit_percent: Option<i32>,
}

impl PriorityLevelSpec {
    /// Reads an object; `Err` says why upstream would ignore it.
    pub fn from_object(pl: &PriorityLevelConfiguration) -> Result<PriorityLevelSpec, String> {
        let name = pl.metadata.name.clone().unwrap_or_default();
        let uid = pl.metadata.uid.clone().unwrap_or_default();
        let spec = pl.spec.as_ref().ok_or("no spec")?;
        let limited_type = spec.type_ == "Limited";
        let exempt_type = spec.type_ == "Exempt";
        if limited_type != spec.limited.is_some() {
            return Err("broken union structure at the top, for Limited".into());
        }
        if exempt_type != spec.exempt.is_some() {
            return Err("broken union structure at the top, for Exempt".into());
        }
        if exempt_type != (name == EXEMPT) {
            return Err("non-alignment between name and type".into());
        }
        if let Some(exempt) = &spec.exempt {
            return Ok(PriorityLevelSpec {
                name,
                uid,
                limit: Limit::Exempt,
                nominal_concurrency_shares: exempt.nominal_concurrency_shares.unwrap_or(0),
                lendable_percent: exempt.lendable_percent,
                borrowing_limit_percent: None,
            });
        }
        let Some(limited) = &spec.limited else {
            return Err("neither Limited nor Exempt".into());
        };
        let response = limited.limit_response.as_ref();
        let reject = response.is_some_and(|r| r.type_ == "Reject");
        let queuing = response.and_then(|r| r.queuing.as_ref());
        if reject != queuing.is_none() {
            return Err("broken union structure for limit response".into());
        }
        let limit = match queuing {
            None => Limit::Reject,
            Some(q) => {
                let queues = q.queues.unwrap_or(DEFAULT_QUEUES);
                let hand_size = q.hand_size.unwrap_or(DEFAULT_HAND_SIZE);
                if queues > 0 {
                    Dealer::new(queues, hand_size).map_err(|e| {
                        format!("the QueueSetConfig implies an invalid shuffle sharding config (DesiredNumQueues is deckSize): {e}")
                    })?;
                }
                Limit::Queue {
                    queues,
                    hand_size,
                    queue_length_limit: q.queue_length_limit.unwrap_or(DEFAULT_QUEUE_LENGTH_LIMIT),
                }
            }
        };
        Ok(PriorityLevelSpec {
            name,
            uid,
            limit,
            nominal_concurrency_shares: limited
                .nominal_concurrency_shares
                .unwrap_or(DEFAULT_NOMINAL_CONCURRENCY_SHARES),
            lendable_percent: limited.lendable_percent,
            borrowing_limit_percent: limited.borrowing_limit_percent,
        })
    }

    /// Whether this is an exempt level.
    pub fn is_exempt(&self) -> bool {
        self.limit == Limit::Exempt
    }
}

/// `metadata.name`, `spec.matchingPrecedence` and `spec.priorityLevelConfiguration.name`.
pub fn flow_schema_keys(fs: &FlowSchema) -> (String, i32, String) {
    let spec = fs.spec.as_ref();
    (
        fs.metadata.name.clone().unwrap_or_default(),
        spec.and_then(|s| s.matching_precedence)
            .unwrap_or(DEFAULT_MATCHING_PRECEDENCE),
        spec.map(|s| s.priority_level_configuration.name.clone())
            .unwrap_or_default(),
    )
}

/// `spec.distinguisherMethod.type`.
pub fn distinguisher_method(fs: &FlowSchema) -> Option<&str> {
    fs.spec
        .as_ref()
        .and_then(|s| s.distinguisher_method.as_ref())
        .map(|d| d.type_.as_str())
}
