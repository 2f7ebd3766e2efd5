//! AlwaysAdmit (admits everything) and AlwaysDeny (rejects every write: 403 `admission
//! control is denying all modifications`).

use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::ApiError;
use std::sync::Arc;

pub const ALWAYS_ADMIT: &str = "AlwaysAdmit";
pub const ALWAYS_DENY: &str = "AlwaysDeny";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(ALWAYS_ADMIT, Arc::new(|_, _| Ok(Arc::new(AlwaysAdmit))))?;
    plugins.register(ALWAYS_DENY, Arc::new(|_, _| Ok(Arc::new(AlwaysDeny))))
}

pub struct AlwaysAdmit;

handler!(
    AlwaysAdmit,
    [Create, Update, Delete, Connect],
    mutates,
    validates
);

#[async_trait]
impl MutationInterface for AlwaysAdmit {
    async fn admit(&self, _: &mut Attributes) -> Result<(), ApiError> {
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for AlwaysAdmit {
    async fn validate(&self, _: &Attributes) -> Result<(), ApiError> {
        Ok(())
    }
}

pub struct AlwaysDeny;

const DENY: &str = "admission control is denying all modifications";

handler!(
    AlwaysDeny,
    [Create, Update, Delete, Connect],
    mutates,
    validates
);

#[async_trait]
impl MutationInterface for AlwaysDeny {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        Err(a.forbidden(DENY))
    }
}

#[async_trait]
impl ValidationInterface for AlwaysDeny {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        Err(a.forbidden(DENY))
    }
}
