use super::*;
use crate::policy::cel::types::from_schema;
use serde_json::json;

fn self_ty() -> Ty {
    from_schema(
        &json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 64},
            "tags": {"type": "array", "items": {"type": "string"}},
            "small": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "any": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }}),
        false,
        "selfType",
    )
}

fn run(src: &str) -> Result<Checked, String> {
    check(src, &[("self", self_ty()), ("oldSelf", self_ty())])
}

#[test]
fn accepts_well_typed_rules() {
    for ok in [
        "self.replicas >= 0",
        "self.replicas < 10.5",
        "self.name.startsWith('a') && size(self.tags) < 5",
        "self.tags.all(t, t.size() < 10)",
        "self.small.map(s, s.size()).all(n, n > 1)",
        "self.labels.exists(k, self.labels[k] == 'x')",
        "has(self.any.foo) && self.any.foo.bar == 1",
        "'a' in self.tags",
        "self.tags.filter(t, t != '').size() == self.tags.size()",
        "self.replicas == oldSelf.replicas",
        "int(self.name) > 0 ? true : false",
        "self.name.matches('^[a-z]+$')",
        "quantity('1Gi').isGreaterThan(quantity('1Mi'))",
        "sets.contains(self.tags, ['a'])",
        "cel.bind(n, self.name, n.size() > 1)",
        "optional.of(self.name).orValue('') == ''",
        "type(self.replicas) == int",
        "self.tags.exists_one(t, t == 'a')",
    ] {
        let c = run(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(c.ty.name(), "bool", "{ok}");
    }
}

#[test]
fn reports_errors_as_cel_go() {
    assert_eq!(
        run("self.foo == foo").unwrap_err(),
        "ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == foo\n | ....^\nERROR: <input>:1:13: undeclared reference to 'foo' (in container '')\n | self.foo == foo\n | ............^"
    );
    assert_eq!(
        run("self.replicas == \"a\"").unwrap_err(),
        "ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | self.replicas == \"a\"\n | ..............^"
    );
    assert_eq!(
        run("self.name + 1 == 'a'").unwrap_err(),
        "ERROR: <input>:1:11: found no matching overload for '_+_' applied to '(string, int)'\n | self.name + 1 == 'a'\n | ..........^"
    );
    assert_eq!(
        run("self.name.startsWith(1)").unwrap_err(),
        "ERROR: <input>:1:21: found no matching overload for 'startsWith' applied to 'string.(int)'\n | self.name.startsWith(1)\n | ....................^"
    );
    assert_eq!(
        run("self.tags.all(t, t > 1)").unwrap_err(),
        "ERROR: <input>:1:20: found no matching overload for '_>_' applied to '(string, int)'\n | self.tags.all(t, t > 1)\n | ...................^"
    );
    assert!(run("nope(self)")
        .unwrap_err()
        .contains("undeclared reference to 'nope'"));
    assert_eq!(run("self.replicas").unwrap().ty.name(), "int");
    // Literals and comments are skipped whole, so the caret lands on the right token.
    for (src, col) in [
        (r#"'a\'.b' + "x.y" + self.nope"#, 23),
        ("\"s.nope\" == self.nope // self.nope", 17),
        ("b\"n\" == self.nope", 13),
        ("1e+3 + self.nope", 12),
    ] {
        let e = run(src).unwrap_err();
        assert!(
            e.starts_with(&format!("ERROR: <input>:1:{col}: ")),
            "{src}: {e}"
        );
    }
}

#[test]
fn estimates_cost_from_sizes() {
    // cel-go's figures: `startsWith` costs a tenth of its argument, `contains` the product
    // of both strings' tenths, per element of the list.
    let prefix = run("self.tags.all(s, s.startsWith('a'))").unwrap().cost;
    assert_eq!(prefix, 1 + 1 + 1 + 1_048_575 * (2 + 1 + 1 + 1));
    let bounded = run("self.small.all(s, s.contains('a'))").unwrap().cost;
    let unbounded = run("self.tags.all(s, s.contains('a'))").unwrap().cost;
    assert!(bounded < 100, "{bounded}");
    assert!(
        unbounded > crate::policy::cel::cost::STATIC_ESTIMATED_COST_LIMIT,
        "{unbounded}"
    );
    let nested = run("self.tags.all(a, self.tags.all(b, a == b))")
        .unwrap()
        .cost;
    assert!(nested > unbounded);
}

#[test]
fn binds_variables() {
    let l = from_schema(
        &json!({"type": "array", "items": {"type": "integer"}}),
        false,
        "l",
    );
    for ok in [
        "cel.bind(n, self.size(), n < 10)",
        "self.all(i, v, v >= 0)",
        "self.exists_one(x, x == 1) || self.map(x, x * 2).all(y, y > 0)",
    ] {
        let c = check(ok, &[("self", l.clone())]).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(c.ty.name(), "bool");
    }
}
