//! One storage for every create-only resource (reviews, TokenRequest, pods/binding): it
//! decodes and describes the typed kind `T`, and hands each create to a handler. The storages
//! upstream writes one by one (`TokenReviewREST`, `SubjectAccessReviewREST`, `BindingREST`,
//! ...) differ only in that handler, so the `Storage` plumbing is written here once.

use crate::rest::{Creater, Decoded, FieldValidation, ResourceInfo, Storage};
use kapi_machinery::Object;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::marker::PhantomData;

/// A rewrite of the body before it is decoded (e.g. dropping a `status` the server fills).
pub type BodyPrep = fn(Object) -> Object;

/// A resource that only answers `POST`: the kind `T` (decoding, OpenAPI) and the handler `H`
/// (the create itself, and the URL-name check of a named subresource).
pub struct CreateOnly<T, H> {
    info: ResourceInfo,
    handler: H,
    prepare: Option<BodyPrep>,
    kind: PhantomData<fn() -> T>,
}

impl<T, H> CreateOnly<T, H> {
    pub fn new(info: ResourceInfo, handler: H) -> Self {
        Self {
            info,
            handler,
            prepare: None,
            kind: PhantomData,
        }
    }

    /// Rewrites each body with `prepare` before decoding it.
    pub fn with_body_prep(mut self, prepare: BodyPrep) -> Self {
        self.prepare = Some(prepare);
        self
    }
}

impl<T, H> Storage for CreateOnly<T, H>
where
    T: DeserializeOwned + Serialize + k8s_openapi::Resource + schemars::JsonSchema + 'static,
    H: Creater + 'static,
{
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        let body = match self.prepare {
            Some(prepare) => prepare(body),
            None => body,
        };
        crate::codec::decode::<T>(body, validation)
    }
    fn as_creater(&self) -> Option<&dyn Creater> {
        Some(&self.handler)
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Some(generator.subschema_for::<T>())
    }
}
