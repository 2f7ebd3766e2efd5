//! Create: metadata -> name -> strategy -> validation -> validating admission -> storage.

use super::Store;
use crate::meta::{generate_name, now_rfc3339, validate_object_meta};
use crate::rest::{Context, Creater, ValidateObjectFn, WriteOptions, WriteResult};
use async_trait::async_trait;
use kapi_machinery::{ApiError, Object};

/// How many names a `generateName` create tries before giving up (upstream retries too).
const GENERATE_NAME_ATTEMPTS: usize = 8;

impl Store {
    /// Upstream's `rest.BeforeCreate` minus validation: namespace, system fields, strategy.
    pub(super) fn before_create(&self, ctx: &Context, obj: &mut Object) -> Result<(), ApiError> {
        self.check_namespace(ctx, obj)?;
        obj.set_deletion_timestamp(None);
        obj.set_deletion_grace_period_seconds(None);
        obj.set_uid(&uuid::Uuid::new_v4().to_string());
        obj.set_creation_timestamp(&now_rfc3339());
        self.strategy.prepare_for_create(obj);
        obj.set_generation(if self.strategy.tracks_generation() {
            1
        } else {
            0
        });
        obj.set_resource_version("");
        Ok(())
    }

    /// Metadata and the strategy's own rules; 422 when anything is wrong.
    pub(super) fn validate_new(&self, obj: &Object) -> Result<(), ApiError> {
        let mut errs = validate_object_meta(obj, self.info.namespaced, self.strategy.name_rule());
        errs.extend(self.strategy.validate(obj));
        if errs.is_empty() {
            Ok(())
        } else {
            Err(self.invalid(obj.name(), &errs))
        }
    }

    async fn create_once(
        &self,
        obj: Object,
        validate: &ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<Object, ApiError> {
        let mut obj = obj;
        self.validate_new(&obj)?;
        validate(obj.clone()).await?;
        let gr = self.gr();
        let name = obj.name().to_string();
        let key = self.key(obj.namespace(), &name);
        if opts.dry_run {
            // The full path runs, including the existence check; nothing is written and the
            // pools are left as they were.
            let existing = self
                .storage
                .get(&key, &crate::reads::LATEST_IF_EXISTS)
                .await
                .map_err(|e| e.into_api_error(&gr, &name))?;
            if existing.is_some() {
                return Err(ApiError::already_exists(&gr, &name));
            }
            self.strategy.allocate(&mut obj, None).await?;
            self.strategy.release(&obj, None).await;
            // answered as a write's would be, through the stored form (upstream's dry run
            // encodes and decodes it, with the storage version's defaults)
            return Ok(self.read_stored(self.to_stored(obj)));
        }
        self.strategy.allocate(&mut obj, None).await?;
        match self
            .storage
            .create(&key, self.to_stored(obj.clone()), self.strategy.ttl())
            .await
        {
            Ok(stored) => Ok(self.read_stored(stored)),
            Err(e) => {
                // Given back only when the write surely did not land (see
                // `write_may_have_landed`).
                if !e.write_may_have_landed() {
                    self.strategy.release(&obj, None).await;
                }
                Err(e.into_api_error(&gr, &name))
            }
        }
    }

    /// The create path shared with create-on-update.
    pub(super) async fn create_object(
        &self,
        ctx: &Context,
        obj: Object,
        validate: &ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<Object, ApiError> {
        let mut obj = self.with_type_meta(obj);
        if !obj.resource_version().is_empty() {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        self.check_namespace(ctx, &mut obj)?;
        if self.info.namespaced {
            if let Some(ns) = &self.namespaces {
                ns.admit_create(obj.namespace(), &self.gr(), obj.name())
                    .await?;
            }
        }
        self.before_create(ctx, &mut obj)?;
        let generate = obj.name().is_empty() && !obj.generate_name().is_empty();
        if !generate {
            return self.create_once(obj, validate, opts).await;
        }
        let base = obj.generate_name().to_string();
        let mut last = None;
        for _ in 0..GENERATE_NAME_ATTEMPTS {
            let mut attempt = obj.clone();
            attempt.set_name(&generate_name(&base));
            match self.create_once(attempt, validate, opts).await {
                Err(e) if e.is_already_exists() => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| ApiError::internal("name generation failed")))
    }
}

#[async_trait]
impl Creater for Store {
    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        validate: ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        self.strategy.check_create(&self.gr())?;
        let object = self.create_object(ctx, obj, &validate, opts).await?;
        Ok(WriteResult {
            object,
            warnings: Vec::new(),
        })
    }
}
