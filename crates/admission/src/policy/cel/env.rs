//! The variables admission expressions see, typed as upstream's `plugin/cel` declares them:
//! `object`, `oldObject` and `params` as `dyn` (or, when type checking a policy, the matched
//! kind's and the param kind's schemas), `request` as the hand-built `AdmissionRequest` type,
//! `namespaceObject`, `authorizer` and, for policies, `variables`.

use super::check::{check_with, Checked};
use super::types::Ty;
use std::collections::BTreeMap;

/// Upstream's `BuildRequestType`.
pub fn request_type() -> Ty {
    let s = Ty::string;
    let obj = |name: &str, fields: &[(&str, Ty)]| {
        let f: BTreeMap<String, Ty> = fields
            .iter()
            .map(|(k, t)| (k.to_string(), t.clone()))
            .collect();
        Ty::object(name, f)
    };
    let gvk = obj(
        "kubernetes.GroupVersionKind",
        &[("group", s()), ("version", s()), ("kind", s())],
    );
    let gvr = obj(
        "kubernetes.GroupVersionResource",
        &[("group", s()), ("version", s()), ("resource", s())],
    );
    let user = obj(
        "kubernetes.UserInfo",
        &[
            ("username", s()),
            ("uid", s()),
            ("groups", Ty::list(s())),
            ("extra", Ty::map(s(), Ty::list(s()))),
        ],
    );
    obj(
        "kubernetes.AdmissionRequest",
        &[
            ("kind", gvk.clone()),
            ("resource", gvr.clone()),
            ("subResource", s()),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", s()),
            ("name", s()),
            ("namespace", s()),
            ("operation", s()),
            ("userInfo", user),
            ("dryRun", Ty::Bool),
            ("options", Ty::Dyn),
        ],
    )
}

/// What an admission expression is checked with.
pub struct AdmissionEnv {
    pub object: Ty,
    /// `None`: the policy has no param kind, so `params` is undeclared.
    pub params: Option<Ty>,
    /// Policy variables by name, with their types (`None`: webhooks have no `variables`).
    pub variables: Option<Vec<(String, Ty)>>,
    /// Whether `Object{...}` and `JSONPatch{...}` literals are declared (mutating policies'
    /// mutations, upstream's `HasPatchTypes`).
    pub patch_types: bool,
}

impl AdmissionEnv {
    /// A webhook's match conditions.
    pub fn webhook() -> Self {
        Self {
            object: Ty::Dyn,
            params: None,
            variables: None,
            patch_types: false,
        }
    }

    /// A policy's expressions, untyped objects (write-time validation).
    pub fn policy(has_params: bool) -> Self {
        Self {
            object: Ty::Dyn,
            params: has_params.then_some(Ty::Dyn),
            variables: Some(Vec::new()),
            patch_types: false,
        }
    }

    /// [`AdmissionEnv::policy`] with the patch types declared: a mutation's expression.
    pub fn with_patch_types(&self) -> Self {
        Self {
            object: self.object.clone(),
            params: self.params.clone(),
            variables: self.variables.clone(),
            patch_types: true,
        }
    }

    fn vars(&self) -> Vec<(&str, Ty)> {
        let mut v = vec![
            ("object", self.object.clone()),
            ("oldObject", self.object.clone()),
            ("request", request_type()),
            ("namespaceObject", Ty::Dyn),
            (
                "authorizer",
                Ty::Opaque("kubernetes.authorization.Authorizer"),
            ),
        ];
        if let Some(p) = &self.params {
            v.push(("params", p.clone()));
        }
        if let Some(vars) = &self.variables {
            let fields: BTreeMap<String, Ty> = vars.iter().cloned().collect();
            v.push(("variables", Ty::object("kubernetes.variables", fields)));
        }
        v
    }

    /// Checks `expr`; the error is cel-go's issues text.
    pub fn check(&self, expr: &str) -> Result<Checked, String> {
        check_with(expr, &self.vars(), self.patch_types)
    }

    /// Upstream's `CompileCELExpression` with the result types the field allows (none: any):
    /// `Err` is the field error's detail (`compilation failed: ...`, or `must evaluate to bool
    /// but got dyn`: a `dyn` result is not a `bool` one, as cel-go's `IsExactType` says).
    pub fn compile(&self, expr: &str, returns: &[Ty]) -> Result<Checked, String> {
        let checked = self
            .check(expr)
            .map_err(|e| format!("compilation failed: {e}"))?;
        let got = checked.ty.name();
        if returns.is_empty() || returns.iter().any(|t| t.name() == got) {
            return Ok(checked);
        }
        let names: Vec<String> = returns.iter().map(Ty::name).collect();
        Err(match names.as_slice() {
            [one] => format!("must evaluate to {one} but got {got}"),
            _ => format!(
                "must evaluate to one of [{}] but got {got}",
                names.join(" ")
            ),
        })
    }

    /// Checks a policy variable's expression and declares it for those after it (a variable
    /// that does not check is still declared, as `dyn`).
    pub fn declare(&mut self, name: &str, expr: &str) -> Result<Checked, String> {
        let r = self.check(expr);
        let ty = r.as_ref().map(|c| c.ty.clone()).unwrap_or(Ty::Dyn);
        if let Some(vars) = &mut self.variables {
            vars.push((name.to_string(), ty));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_variables() {
        let mut env = AdmissionEnv::policy(false);
        assert!(env.declare("n", "object.metadata.name").is_ok());
        for ok in [
            "variables.n == 'x' && request.operation == 'CREATE'",
            "request.userInfo.groups.exists(g, g == 'admins')",
            "authorizer.group('apps').resource('deployments').namespace('d').check('get').allowed()",
            "authorizer.requestResource.check('update').allowed()",
            "namespaceObject.metadata.labels['x'] == 'y'",
        ] {
            env.check(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let e = env.check("params.x == 1").unwrap_err();
        assert!(e.contains("undeclared reference to 'params'"), "{e}");
        let e = env.check("variables.m == 1").unwrap_err();
        assert!(e.contains("undefined field 'm'"), "{e}");
        let e = env.check("request.foo == 'x'").unwrap_err();
        assert_eq!(
            e,
            "ERROR: <input>:1:8: undefined field 'foo'\n | request.foo == 'x'\n | .......^"
        );
        assert!(AdmissionEnv::webhook().check("variables.x").is_err());
        let b = [Ty::Bool];
        assert!(env.compile("object.spec.x == 1", &b).is_ok());
        assert_eq!(
            env.compile("object.spec.x", &b).err().as_deref(),
            Some("must evaluate to bool but got dyn")
        );
        assert_eq!(
            env.compile("1", &[Ty::string(), Ty::Null]).err().as_deref(),
            Some("must evaluate to one of [string null_type] but got int")
        );
        assert!(env
            .compile("object.(", &b)
            .unwrap_err()
            .starts_with("compilation failed: "));
        for e in [
            "cel.bind(r, 1, r > 0)",
            "type(1) == int",
            "dyn(object.x) == 1",
        ] {
            env.compile(e, &b)
                .unwrap_or_else(|err| panic!("{e}: {err}"));
        }
    }
}
