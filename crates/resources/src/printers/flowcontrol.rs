//! Printers of flowcontrol.apiserver.k8s.io (`printFlowSchema`,
//! `printPriorityLevelConfiguration`): the descriptions are upstream's, from the v1beta3 types'
//! documentation.

use super::{Column, Printer, Row, AGE, NAME};
use kapi_machinery::Object;
use kapi_registry::fields::{arr_at, at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};
use std::cmp::Ordering;

/// Rows in matching order (`printFlowSchemaList` sorts by `FlowSchemaSequence`).
pub const FLOW_SCHEMAS: Printer = Printer::new(FLOW_SCHEMA_COLUMNS).ordered(matching_order);
pub const PRIORITY_LEVELS: Printer = Printer::new(PRIORITY_LEVEL_COLUMNS);

const NONE: &str = "<none>";

/// Matching precedence, then name.
fn matching_order(a: &Object, b: &Object) -> Ordering {
    let precedence = |o: &Object| {
        kapi_registry::kind::at(o, &["spec", "matchingPrecedence"])
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    precedence(a)
        .cmp(&precedence(b))
        .then_with(|| a.name().cmp(b.name()))
}

const FLOW_SCHEMA_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "PriorityLevel",
        "string",
        "`name` is the name of the priority level configuration being referenced Required.",
    )
    .string(jsonpath!(".spec.priorityLevelConfiguration.name")),
    Column::new("MatchingPrecedence", "string", "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.")
        .computed(|r| json!(at(r.v, &["spec", "matchingPrecedence"]).and_then(Value::as_i64).unwrap_or(0))),
    Column::new("DistinguisherMethod", "string", "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.")
        .computed(|r| match at(r.v, &["spec", "distinguisherMethod"]).filter(|d| !d.is_null()) {
            Some(d) => json!(str_at(d, &["type"])),
            None => json!(NONE),
        }),
    AGE,
    Column::new(
        "MissingPL",
        "string",
        "references a broken or non-existent PriorityLevelConfiguration",
    )
    .computed(missing_pl),
];

/// The `Dangling` condition's status, `?` before the controller has written one.
fn missing_pl(r: &Row) -> Value {
    let dangling = arr_at(r.v, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Dangling")
        .map(|c| str_at(c, &["status"]).to_string());
    json!(dangling.unwrap_or_else(|| "?".into()))
}

/// A `limited` (or `limited.limitResponse.queuing`) integer, `<none>` without that part.
fn limited_int(r: &Row, path: &[&str]) -> Value {
    let limited = at(r.v, &["spec", "limited"]).filter(|l| !l.is_null());
    let Some(limited) = limited else {
        return json!(NONE);
    };
    let (parent, key) = match path.split_last() {
        Some((key, parent)) => (parent, *key),
        None => return json!(NONE),
    };
    match at(limited, parent).filter(|v| !v.is_null()) {
        Some(p) => json!(p.get(key).and_then(Value::as_i64).unwrap_or(0)),
        None => json!(NONE),
    }
}

const PRIORITY_LEVEL_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.")
        .string(jsonpath!(".spec.type")),
    Column::new("NominalConcurrencyShares", "string", "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level. This field has a default value of 30.")
        .computed(|r| limited_int(r, &["nominalConcurrencyShares"])),
    Column::new("Queues", "string", "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.")
        .computed(|r| limited_int(r, &["limitResponse", "queuing", "queues"])),
    Column::new("HandSize", "string", "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.")
        .computed(|r| limited_int(r, &["limitResponse", "queuing", "handSize"])),
    Column::new("QueueLengthLimit", "string", "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.")
        .computed(|r| limited_int(r, &["limitResponse", "queuing", "queueLengthLimit"])),
    AGE,
];
