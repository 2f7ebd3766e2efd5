//! One range's allocations kept in storage as upstream's `RangeAllocation` object
//! (`allocator/storage/storage.go`): every change is a compare-and-swap on the object's
//! revision, so processes sharing the storage never hand out the same item.

use super::bitmap::Bitmap;
use super::AllocationError;
use base64::Engine;
use futures::future::BoxFuture;
use kapi_machinery::Object;
use kapi_storage::{DynStorage, UpdateFn};
use serde_json::{json, Value};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A `RangeAllocation` as read from storage.
pub struct Snapshot {
    pub range: String,
    pub data: Vec<u8>,
    /// Empty when the object does not exist yet.
    pub resource_version: String,
}

/// Why a repair's write did not happen.
#[derive(Debug)]
pub enum WriteError {
    /// The object changed since the snapshot was read: read again.
    Conflict,
    Storage(String),
}

pub struct RangeStore {
    pub(super) storage: DynStorage,
    pub(super) key: &'static str,
    /// Upstream's resource name in its messages (`serviceipallocations`).
    pub(super) resource: &'static str,
    /// The range as the object's `range` spells it (`10.0.0.0/24`, `30000-32767`).
    pub(super) spec: String,
    pub(super) max: usize,
    /// Start of the dynamic band (upstream's `calculateRangeOffset`).
    pub(super) offset: usize,
    /// Serialises this process's changes, as upstream's `Etcd.lock`: only other processes
    /// make the compare-and-swap retry.
    pub(super) lock: tokio::sync::Mutex<()>,
}

fn read(obj: &Object) -> (String, Vec<u8>) {
    let range = obj
        .get("range")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let data = obj
        .get("data")
        .and_then(Value::as_str)
        .and_then(|d| B64.decode(d).ok())
        .unwrap_or_default();
    (range, data)
}

impl RangeStore {
    pub fn spec(&self) -> &str {
        &self.spec
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// The object a snapshot is written as.
    fn object(&self, bitmap: &Bitmap) -> Object {
        let v = json!({
            "kind": "RangeAllocation",
            "apiVersion": "v1",
            "metadata": {},
            "range": self.spec,
            "data": B64.encode(bitmap.snapshot()),
        });
        Object::from_value(v).unwrap_or_default()
    }

    /// A `guaranteed_update` of the key with a synchronous step (it may run several times).
    async fn swap(
        &self,
        mut step: impl FnMut(Option<Object>) -> kapi_storage::Result<Object> + Send,
    ) -> kapi_storage::Result<Object> {
        let attempt: &mut UpdateFn<'_> = &mut |current: Option<Object>| {
            let ready: BoxFuture<'_, _> = Box::pin(futures::future::ready(step(current)));
            ready
        };
        self.storage
            .guaranteed_update(self.key, None, true, attempt)
            .await
    }

    /// Applies `op` to the stored bitmap and writes the result with a compare-and-swap,
    /// retried against the newer bitmap when another process won.
    async fn update<T: Send>(
        &self,
        mut op: impl FnMut(&mut Bitmap) -> Result<T, AllocationError> + Send,
    ) -> Result<T, AllocationError> {
        let _serial = self.lock.lock().await;
        let mut outcome: Option<Result<T, AllocationError>> = None;
        let written = self
            .swap(|current| {
                let step = (|| {
                    // Repair creates the object; until then nothing can be handed out.
                    let current =
                        current.ok_or_else(|| AllocationError::NotReady(self.resource.into()))?;
                    let (range, data) = read(&current);
                    if range != self.spec {
                        return Err(AllocationError::RangeMismatch);
                    }
                    let mut bitmap = Bitmap::restore(self.max, &data);
                    let value = op(&mut bitmap)?;
                    let mut next = current;
                    next.insert("data", json!(B64.encode(bitmap.snapshot())));
                    Ok((next, value))
                })();
                match step {
                    Ok((next, value)) => {
                        outcome = Some(Ok(value));
                        Ok(next)
                    }
                    Err(e) => {
                        let message = e.to_string();
                        outcome = Some(Err(e));
                        Err(kapi_storage::Error::Internal(message))
                    }
                }
            })
            .await;
        match (written, outcome) {
            (Ok(_), Some(Ok(value))) => Ok(value),
            (_, Some(Err(e))) => Err(e),
            (Err(e), _) => Err(AllocationError::Storage(e.to_string())),
            (Ok(_), None) => Err(AllocationError::Storage(
                "no allocation was attempted".into(),
            )),
        }
    }

    /// Takes offset `i`; `taken` is the error when it already is.
    pub async fn allocate(&self, i: usize, taken: AllocationError) -> Result<(), AllocationError> {
        let mut taken = Some(taken);
        self.update(|b| {
            if b.set(i) {
                Ok(())
            } else {
                Err(taken.take().unwrap_or(AllocationError::Full))
            }
        })
        .await
    }

    /// Takes a random free offset (never `skip`).
    pub async fn allocate_next(&self, skip: Option<usize>) -> Result<usize, AllocationError> {
        let offset = self.offset;
        self.update(|b| {
            let i = b.free_random(offset, skip).ok_or(AllocationError::Full)?;
            b.set(i);
            Ok(i)
        })
        .await
    }

    /// Gives offset `i` back; releasing a free offset writes nothing.
    pub async fn release(&self, i: usize) -> Result<(), AllocationError> {
        self.update(|b| {
            b.clear(i);
            Ok(())
        })
        .await
    }

    /// The stored object, if any (upstream's `Etcd.Get`).
    pub async fn get(&self) -> Result<Snapshot, AllocationError> {
        let got = self
            .storage
            .get(self.key, &kapi_registry::reads::LATEST_IF_EXISTS)
            .await
            .map_err(|e| AllocationError::Storage(e.to_string()))?;
        Ok(match got {
            Some(o) => {
                let (range, data) = read(&o);
                Snapshot {
                    range,
                    data,
                    resource_version: o.resource_version().to_string(),
                }
            }
            None => Snapshot {
                range: String::new(),
                data: Vec::new(),
                resource_version: String::new(),
            },
        })
    }

    /// Writes `bitmap` as the whole state if the object is still at `resource_version`
    /// (empty: still absent), as upstream's `Etcd.CreateOrUpdate`.
    pub async fn create_or_update(
        &self,
        resource_version: &str,
        bitmap: &Bitmap,
    ) -> Result<(), WriteError> {
        let _serial = self.lock.lock().await;
        let wanted = self.object(bitmap);
        let mut conflict = false;
        let written = self
            .swap(|current| {
                let current_rv = current
                    .as_ref()
                    .map(|c| c.resource_version().to_string())
                    .unwrap_or_default();
                if !current_rv.is_empty() && current_rv != resource_version {
                    conflict = true;
                    Err(kapi_storage::Error::Internal(
                        "the provided resource version does not match".into(),
                    ))
                } else {
                    conflict = false;
                    Ok(wanted.clone())
                }
            })
            .await;
        match written {
            Ok(_) => Ok(()),
            Err(_) if conflict => Err(WriteError::Conflict),
            Err(kapi_storage::Error::Conflict { .. }) => Err(WriteError::Conflict),
            Err(e) => Err(WriteError::Storage(e.to_string())),
        }
    }
}
