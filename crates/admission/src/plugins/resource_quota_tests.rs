use super::super::quota_usage::counted_names;
use super::*;
use crate::objects::memory::MemoryObjects;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};
use serde_json::json;

fn create(name: &str) -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "ConfigMap"),
        GroupVersionResource::new("", "v1", "configmaps"),
        "d",
        name,
    );
    a.object =
        Some(Object::from_value(json!({"metadata": {"name": name, "namespace": "d"}})).unwrap());
    a
}

#[tokio::test]
async fn count_quota_charges_and_refuses_the_third() {
    let m = Arc::new(MemoryObjects::default());
    m.put("resourcequotas", json!({"metadata": {"name": "q", "namespace": "d"}, "spec": {"hard": {"count/configmaps": "2"}}}));
    let rq = ResourceQuota::new(m.clone());
    for name in ["a", "b"] {
        rq.validate(&create(name)).await.unwrap();
        m.put(
            "configmaps",
            json!({"metadata": {"name": name, "namespace": "d"}}),
        );
    }
    let q = m.get(&quotas_gr(), "d", "q").await.unwrap().unwrap();
    assert_eq!(q.get("status").unwrap()["used"]["count/configmaps"], "2");
    assert_eq!(q.get("status").unwrap()["hard"]["count/configmaps"], "2");
    let e = rq.validate(&create("c")).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"configmaps "c" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"#
    );
    // Other resources are not charged against it.
    let mut s = create("s");
    s.resource = GroupVersionResource::new("", "v1", "secrets");
    rq.validate(&s).await.unwrap();
}

#[test]
fn counted_names_cover_count_and_legacy_names() {
    assert_eq!(
        counted_names(&GroupResource::new("", "configmaps")),
        vec!["count/configmaps", "configmaps"]
    );
    assert_eq!(
        counted_names(&GroupResource::new("apps", "deployments")),
        vec!["count/deployments.apps"]
    );
}

fn pod(name: &str, containers: serde_json::Value) -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionResource::new("", "v1", "pods"),
        "d",
        name,
    );
    a.object = Some(
        Object::from_value(json!({"metadata": {"name": name, "namespace": "d"},
            "spec": {"containers": containers}}))
        .unwrap(),
    );
    a
}

fn sized(cpu: &str, mem: &str) -> serde_json::Value {
    json!([{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": {"cpu": cpu, "memory": mem}}}])
}

#[tokio::test]
async fn compute_quota_charges_requests_and_limits() {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "resourcequotas",
        json!({"metadata": {"name": "compute", "namespace": "d"},
        "spec": {"hard": {"requests.cpu": "1", "limits.memory": "1Gi", "pods": "10"}}}),
    );
    let rq = ResourceQuota::new(m.clone());
    let a = pod("p1", sized("600m", "512Mi"));
    rq.validate(&a).await.unwrap();
    m.put("pods", a.object.unwrap().into_value());
    let q = m.get(&quotas_gr(), "d", "compute").await.unwrap().unwrap();
    let used = &q.get("status").unwrap()["used"];
    assert_eq!(used["requests.cpu"], "600m");
    assert_eq!(used["limits.memory"], "512Mi");
    assert_eq!(used["pods"], "1");
    let e = rq
        .validate(&pod("p2", sized("500m", "256Mi")))
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"pods "p2" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"#
    );
    let e = rq
        .validate(&pod(
            "p3",
            json!([{"name": "web"}, {"name": "db", "resources": {"requests": {"cpu": "1m"}}}]),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        r#"pods "p3" is forbidden: failed quota: compute: must specify limits.memory for: db,web; requests.cpu for: web"#
    );
}

#[tokio::test]
async fn storage_and_service_quotas() {
    let m = Arc::new(MemoryObjects::default());
    m.put("resourcequotas", json!({"metadata": {"name": "q", "namespace": "d"},
        "spec": {"hard": {"requests.storage": "5Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "0",
            "services.nodeports": "1", "services.loadbalancers": "0"}}}));
    let rq = ResourceQuota::new(m);
    let attrs = |resource: &str, obj: serde_json::Value| {
        let mut a = Attributes::new(
            Operation::Create,
            GroupVersionKind::new("", "v1", "X"),
            GroupVersionResource::new("", "v1", resource),
            "d",
            "x",
        );
        a.object = Some(Object::from_value(obj).unwrap());
        a
    };
    let claim = |size: &str, class: &str| {
        attrs(
            "persistentvolumeclaims",
            json!({"metadata": {"name": "x"},
            "spec": {"storageClassName": class, "resources": {"requests": {"storage": size}}}}),
        )
    };
    rq.validate(&claim("2Gi", "std")).await.unwrap();
    // The first claim is not stored, but its charge is in the quota's status.
    let e = rq.validate(&claim("6Gi", "std")).await.unwrap_err();
    assert!(e.message.ends_with("requested: requests.storage=6Gi, used: requests.storage=2Gi, limited: requests.storage=5Gi"), "{}", e.message);
    let e = rq.validate(&claim("1Gi", "gold")).await.unwrap_err();
    assert!(
        e.message
            .contains("gold.storageclass.storage.k8s.io/persistentvolumeclaims=1"),
        "{}",
        e.message
    );
    let svc = |ty: &str, ports: usize| {
        let ports: Vec<_> = (0..ports).map(|i| json!({"port": 80 + i})).collect();
        attrs(
            "services",
            json!({"metadata": {"name": "x"}, "spec": {"type": ty, "ports": ports}}),
        )
    };
    rq.validate(&svc("ClusterIP", 3)).await.unwrap();
    rq.validate(&svc("NodePort", 1)).await.unwrap();
    let e = rq.validate(&svc("NodePort", 2)).await.unwrap_err();
    assert!(
        e.message.contains("requested: services.nodeports=2"),
        "{}",
        e.message
    );
    let e = rq.validate(&svc("LoadBalancer", 0)).await.unwrap_err();
    assert!(
        e.message.contains("services.loadbalancers=1"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn scoped_quotas_only_charge_matching_pods() {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "resourcequotas",
        json!({"metadata": {"name": "be", "namespace": "d"},
        "spec": {"hard": {"pods": "0"}, "scopes": ["BestEffort"]}}),
    );
    let rq = ResourceQuota::new(m);
    rq.validate(&pod("sized", sized("1", "1Gi"))).await.unwrap();
    let e = rq
        .validate(&pod("be", json!([{"name": "c"}])))
        .await
        .unwrap_err();
    assert!(e.message.contains("exceeded quota: be"), "{}", e.message);
    // Other resources are outside a scoped quota.
    rq.validate(&create("cm")).await.unwrap();
}

/// Storage with compare-and-swap updates and a watch cache of quotas that shows only what the
/// test copies into it; every call yields, so concurrent requests interleave.
#[derive(Default)]
struct CachedStore {
    stored: MemoryObjects,
    cached_quotas: std::sync::Mutex<Vec<Object>>,
    live_lists: std::sync::atomic::AtomicUsize,
    revision: std::sync::atomic::AtomicI64,
}

impl CachedStore {
    fn sync_cache(&self) {
        let quotas = self
            .stored
            .objects
            .lock()
            .unwrap()
            .iter()
            .filter(|((r, _, _), _)| r == "resourcequotas")
            .map(|(_, o)| o.clone())
            .collect();
        *self.cached_quotas.lock().unwrap() = quotas;
    }
}

#[async_trait]
impl ObjectStore for CachedStore {
    async fn get(
        &self,
        gr: &GroupResource,
        ns: &str,
        name: &str,
    ) -> Result<Option<Object>, ApiError> {
        tokio::task::yield_now().await;
        self.stored.get(gr, ns, name).await
    }
    async fn list(&self, gr: &GroupResource, ns: &str) -> Result<Vec<Object>, ApiError> {
        tokio::task::yield_now().await;
        if gr.resource == "resourcequotas" {
            self.live_lists
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.stored.list(gr, ns).await
    }
    async fn list_cached(&self, gr: &GroupResource, ns: &str) -> Result<Vec<Object>, ApiError> {
        tokio::task::yield_now().await;
        assert_eq!(gr.resource, "resourcequotas");
        let cached = self.cached_quotas.lock().unwrap().clone();
        Ok(cached.into_iter().filter(|q| q.namespace() == ns).collect())
    }
    async fn create(&self, gr: &GroupResource, obj: Object) -> Result<Object, ApiError> {
        self.stored.create(gr, obj).await
    }
    async fn update(&self, gr: &GroupResource, mut obj: Object) -> Result<Object, ApiError> {
        tokio::task::yield_now().await;
        let current = self.stored.get(gr, obj.namespace(), obj.name()).await?;
        if current.map(|c| c.resource_version().to_string()) != Some(obj.resource_version().into())
        {
            return Err(ApiError::conflict(
                gr,
                obj.name(),
                "the object has been modified",
            ));
        }
        let rv = self
            .revision
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        obj.set_resource_version(&rv.to_string());
        self.stored.update(gr, obj).await
    }
}

fn count_quota(hard: &str) -> serde_json::Value {
    json!({"metadata": {"name": "q", "namespace": "d", "resourceVersion": "0"},
        "spec": {"hard": {"count/configmaps": hard}}})
}

fn create_quota() -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "ResourceQuota"),
        GroupVersionResource::new("", "v1", "resourcequotas"),
        "d",
        "q",
    );
    a.object = Some(Object::from_value(count_quota("0")).unwrap());
    a
}

#[tokio::test]
async fn an_empty_cache_is_confirmed_by_one_live_list_kept_for_a_while() {
    let m = Arc::new(CachedStore::default());
    let rq = ResourceQuota::new(m.clone());
    for name in ["a", "b", "c"] {
        rq.validate(&create(name)).await.unwrap();
    }
    // One live list for the namespace, then its answer is reused (upstream's liveLookupCache).
    assert_eq!(m.live_lists.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A quota the cache holds is read from the cache.
    m.stored.put("resourcequotas", count_quota("5"));
    m.sync_cache();
    rq.validate(&create("d")).await.unwrap();
    assert_eq!(m.live_lists.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_quota_created_just_before_a_create_is_enforced() {
    let m = Arc::new(CachedStore::default());
    let rq = ResourceQuota::new(m.clone());
    // The namespace had no quota: that answer is kept...
    rq.validate(&create("before")).await.unwrap();
    // ...until a quota is created through this server; the cache has not seen it yet.
    rq.validate(&create_quota()).await.unwrap();
    m.stored.put("resourcequotas", count_quota("0"));
    let e = rq.validate(&create("after")).await.unwrap_err();
    assert_eq!(
        e.message,
        r#"configmaps "after" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=0, limited: count/configmaps=0"#
    );
}

#[tokio::test]
async fn concurrent_creates_are_charged_one_by_one() {
    let m = Arc::new(CachedStore::default());
    m.stored.put("resourcequotas", count_quota("5"));
    // The cache holds the quota as it was first: every charge after the first finds it stale.
    m.sync_cache();
    let rq = Arc::new(ResourceQuota::new(m.clone()));
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let rq = rq.clone();
            tokio::spawn(async move { rq.validate(&create(&format!("cm{i}"))).await })
        })
        .collect();
    let mut admitted = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => admitted += 1,
            Err(e) => assert!(
                e.code == 403 && e.message.contains("exceeded quota: q") || e.code == 409,
                "{e:?}"
            ),
        }
    }
    // None of the admitted configmaps is stored yet: the quota's status holds their charges.
    assert!(admitted <= 5, "{admitted} admitted against a quota of 5");
    let q = m.get(&quotas_gr(), "d", "q").await.unwrap().unwrap();
    assert_eq!(
        q.get("status").unwrap()["used"]["count/configmaps"],
        admitted.to_string()
    );
}
