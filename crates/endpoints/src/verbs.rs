//! The verbs a storage serves, probed once from its REST capabilities: the router allows a
//! request's verb by this table and discovery lists the same table's verbs, so routes and
//! discovery cannot disagree (upstream's `registerResourceHandlers` maps its actions to
//! discovery verbs the same way).

use kapi_registry::rest;

/// A Kubernetes verb a route can serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Create,
    Get,
    List,
    Watch,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    /// Every verb, in discovery's (alphabetical) order.
    const DISCOVERY_ORDER: [Verb; 8] = [
        Verb::Create,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Get,
        Verb::List,
        Verb::Patch,
        Verb::Update,
        Verb::Watch,
    ];

    /// Discovery's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// Parses `RequestInfo.verb`.
    pub fn parse(s: &str) -> Option<Verb> {
        Some(match s {
            "create" => Verb::Create,
            "get" => Verb::Get,
            "list" => Verb::List,
            "watch" => Verb::Watch,
            "update" => Verb::Update,
            "patch" => Verb::Patch,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::DeleteCollection,
            _ => return None,
        })
    }

    /// The verb a connect subresource's HTTP method is authorized as (GET get, POST create,
    /// PUT update, PATCH patch, DELETE delete), as upstream's discovery lists `pods/exec`
    /// (`create`, `get`).
    fn of_connect_method(method: &str) -> Option<Verb> {
        Some(match method {
            "GET" => Verb::Get,
            "POST" => Verb::Create,
            "PUT" => Verb::Update,
            "PATCH" => Verb::Patch,
            "DELETE" => Verb::Delete,
            _ => return None,
        })
    }
}

/// The verbs a storage supports, probed from its capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerbTable {
    pub create: bool,
    pub get: bool,
    pub list: bool,
    pub watch: bool,
    pub update: bool,
    pub patch: bool,
    pub delete: bool,
    pub delete_collection: bool,
}

impl VerbTable {
    /// Probes `storage`'s `as_*` capabilities; a connecter serves the verbs of its methods.
    pub fn probe(storage: &dyn rest::Storage) -> Self {
        if let Some(connecter) = storage.as_connecter() {
            let mut t = Self::default();
            for verb in connecter
                .connect_methods()
                .iter()
                .filter_map(|m| Verb::of_connect_method(m))
            {
                t.set(verb);
            }
            return t;
        }
        Self {
            create: storage.as_creater().is_some(),
            get: storage.as_getter().is_some(),
            list: storage.as_lister().is_some(),
            // Both per-object watch and watch of a list are the one `watch` verb.
            watch: storage.as_watcher().is_some(),
            update: storage.as_updater().is_some(),
            patch: storage.as_patcher().is_some(),
            delete: storage.as_graceful_deleter().is_some(),
            delete_collection: storage.as_collection_deleter().is_some(),
        }
    }

    fn set(&mut self, verb: Verb) {
        match verb {
            Verb::Create => self.create = true,
            Verb::Get => self.get = true,
            Verb::List => self.list = true,
            Verb::Watch => self.watch = true,
            Verb::Update => self.update = true,
            Verb::Patch => self.patch = true,
            Verb::Delete => self.delete = true,
            Verb::DeleteCollection => self.delete_collection = true,
        }
    }

    /// Whether a request with `verb` is routed to the storage.
    pub fn allows(&self, verb: Verb) -> bool {
        match verb {
            Verb::Create => self.create,
            Verb::Get => self.get,
            Verb::List => self.list,
            Verb::Watch => self.watch,
            Verb::Update => self.update,
            Verb::Patch => self.patch,
            Verb::Delete => self.delete,
            Verb::DeleteCollection => self.delete_collection,
        }
    }

    /// The verbs in discovery's order, as kube-apiserver lists them.
    pub fn verbs(&self) -> Vec<&'static str> {
        Verb::DISCOVERY_ORDER
            .into_iter()
            .filter(|v| self.allows(*v))
            .map(Verb::as_str)
            .collect()
    }
}

/// The discovery verbs of `storage`: [`VerbTable::probe`]'s, in discovery's order.
pub fn verbs_of(storage: &dyn rest::Storage) -> Vec<&'static str> {
    VerbTable::probe(storage).verbs()
}
