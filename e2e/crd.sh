# CustomResourceDefinition cases: a CRD applied and Established, custom objects created, read,
# listed with their printer columns (`-o wide` included), explained, refused by their schema and
# CEL rules in upstream's words, written through /status and /scale, read in a second version,
# then the CRD deleted with its objects. Run once per (backend, kubectl); the group carries $NS so
# the runs on one server do not collide.

run_crd_cases() {
  local G="$NS.example.com" C="crd-$NS" M="$WORK/manifests-$NS-crd"
  local CRD="crontabs.$NS.example.com"
  mkdir -p "$M"
  expect_out "crd: namespace" "^namespace/$C created$" k create ns "$C"
  cat >"$M/crd.yaml" <<Y
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $CRD
spec:
  group: $G
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Image, type: string, jsonPath: .spec.image, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: CronTab runs an image on a schedule.
        properties:
          spec:
            type: object
            description: The schedule and what runs.
            required: [image]
            x-kubernetes-validations:
            - rule: "self.replicas <= self.maxReplicas"
              message: replicas must not exceed maxReplicas
            properties:
              cronSpec:
                type: string
                description: When it runs, in cron syntax.
              image:
                type: string
              replicas:
                type: integer
                minimum: 0
                maximum: 10
                default: 1
              maxReplicas:
                type: integer
                default: 5
              mode:
                type: string
                enum: [Allow, Forbid]
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
Y
  expect_out "crd: apply" "^customresourcedefinition.apiextensions.k8s.io/$CRD created$" k apply -f "$M/crd.yaml"
  expect_out "crd: established" "condition met" \
    k wait --for condition=established --timeout=20s "crd/$CRD"
  expect_eq "crd: names accepted" "True ct" \
    k get crd "$CRD" -o 'jsonpath={.status.conditions[?(@.type=="NamesAccepted")].status} {.status.acceptedNames.shortNames[0]}'
  expect_eq "crd: storedVersions" "v1" k get crd "$CRD" -o 'jsonpath={.status.storedVersions[*]}'
  expect_out "crd: get columns" "^$CRD +[0-9]{4}-" k get crd "$CRD" --no-headers
  expect_out "crd: api-resources" "^crontabs +ct +$G/v1 +true +CronTab$" k api-resources --api-group="$G"

  cat >"$M/ct.yaml" <<Y
apiVersion: $G/v1
kind: CronTab
metadata: {name: daily, namespace: $C}
spec: {cronSpec: "0 0 * * *", image: busybox, replicas: 2}
Y
  expect_out "cr: apply" "^crontab.$G/daily created$" k apply -f "$M/ct.yaml"
  expect_out "cr: get by short name with printer columns" '^daily +0 0 \* \* \* +2 +[0-9]+s$' k get ct -n "$C" --no-headers
  expect_out "cr: headers" '^NAME +SPEC +REPLICAS +AGE$' k get crontabs -n "$C"
  expect_out "cr: -o wide adds priority columns" '^daily +0 0 \* \* \* +2 +busybox +[0-9]+s$' k get ct -n "$C" -o wide --no-headers
  expect_eq "cr: defaults applied" "5" k get ct daily -n "$C" -o 'jsonpath={.spec.maxReplicas}'
  expect_eq "cr: generation 1" "1" k get ct daily -n "$C" -o 'jsonpath={.metadata.generation}'
  expect_out "cr: in kubectl get all" "crontab.$G/daily" k get all -n "$C"
  expect_out "cr: explain from OpenAPI" 'cronSpec[[:space:]]+<string>' k explain "crontabs.$G.spec"
  expect_out "cr: explain description" 'CronTab runs an image on a schedule' k explain "crontabs.$G"

  # schema and CEL errors, as kube-apiserver words them
  cat >"$M/bad-type.yaml" <<Y
apiVersion: $G/v1
kind: CronTab
metadata: {name: bad, namespace: $C}
spec: {image: busybox, replicas: "two"}
Y
  expect_fail "cr: type error" \
    '* spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"' \
    k create -f "$M/bad-type.yaml"
  expect_fail "cr: rules not run over a wrong type" \
    '* <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' \
    k create -f "$M/bad-type.yaml"
  cat >"$M/bad-max.yaml" <<Y
apiVersion: $G/v1
kind: CronTab
metadata: {name: bad, namespace: $C}
spec: {image: busybox, replicas: 20, maxReplicas: 30}
Y
  expect_fail "cr: maximum" \
    'spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10' \
    k create -f "$M/bad-max.yaml"
  cat >"$M/bad-required.yaml" <<Y
apiVersion: $G/v1
kind: CronTab
metadata: {name: bad, namespace: $C}
spec: {cronSpec: "* * * * *", mode: Sometimes}
Y
  expect_fail "cr: required" 'spec.image: Required value' k create -f "$M/bad-required.yaml"
  expect_fail "cr: enum" 'spec.mode: Unsupported value: "Sometimes": supported values: "Allow", "Forbid"' \
    k create -f "$M/bad-required.yaml"
  cat >"$M/bad-cel.yaml" <<Y
apiVersion: $G/v1
kind: CronTab
metadata: {name: bad, namespace: $C}
spec: {image: busybox, replicas: 4, maxReplicas: 3}
Y
  expect_fail "cr: CEL rule" \
    'The CronTab "bad" is invalid: spec: Invalid value: "object": replicas must not exceed maxReplicas' \
    k create -f "$M/bad-cel.yaml"
  cat >"$M/bad-unknown.yaml" <<Y
apiVersion: $G/v1
kind: CronTab
metadata: {name: bad, namespace: $C}
spec: {image: busybox, colour: red}
Y
  expect_fail "cr: unknown field refused (Strict)" \
    "CronTab in version \"v1\" cannot be handled as a CronTab: strict decoding error: unknown field \"spec.colour\"" \
    k create -f "$M/bad-unknown.yaml"
  expect_eq "cr: nothing stored on refusal" "crontab.$G/daily" k get ct -n "$C" -o name
  expect_out "cr: unknown field pruned (validate=false)" "^crontab.$G/bad created$" \
    k create --validate=false -f "$M/bad-unknown.yaml"
  expect_eq "cr: pruned field gone" "" k get ct bad -n "$C" -o 'jsonpath={.spec.colour}'

  # writes
  expect_fail "cr: strategic merge refused" \
    'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml' \
    k patch ct daily -n "$C" -p '{"spec":{"image":"alpine"}}'
  expect_out "cr: merge patch" "^crontab.$G/daily patched$" \
    k patch ct daily -n "$C" --type=merge -p '{"spec":{"image":"alpine"},"status":{"replicas":9}}'
  expect_eq "cr: status ignored on the main resource, generation bumped" "alpine  2" \
    k get ct daily -n "$C" -o 'jsonpath={.spec.image} {.status.replicas} {.metadata.generation}'
  expect_out "cr: status subresource" "^crontab.$G/daily patched$" \
    k patch ct daily -n "$C" --subresource=status --type=merge -p '{"status":{"replicas":2,"selector":"app=daily"},"spec":{"image":"ignored"}}'
  expect_eq "cr: only status written, generation kept" "alpine 2 2" \
    k get ct daily -n "$C" -o 'jsonpath={.spec.image} {.status.replicas} {.metadata.generation}'
  expect_out "cr: scale" "^crontab.$G/daily scaled$" k scale ct daily -n "$C" --replicas=4
  expect_eq "cr: scale wrote spec.replicas" "4" k get ct daily -n "$C" -o 'jsonpath={.spec.replicas}'
  expect_out "cr: scale subresource reads status" '"kind":"Scale".*"spec":\{"replicas":4\},"status":\{"replicas":2,"selector":"app=daily"\}' \
    k get --raw "/apis/$G/v1/namespaces/$C/crontabs/daily/scale"
  expect_out "cr: server-side apply" "^crontab.$G/daily serverside-applied$" \
    k apply --server-side --force-conflicts --field-manager=e2e-ssa -f "$M/ct.yaml"
  expect_out "cr: managedFields" 'e2e-ssa' k get ct daily -n "$C" -o 'jsonpath={.metadata.managedFields[*].manager}' --show-managed-fields
  expect_out "cr: dry-run create" "^crontab.$G/dry created \(server dry run\)$" \
    k create -n "$C" --dry-run=server -f - <<<"{\"apiVersion\":\"$G/v1\",\"kind\":\"CronTab\",\"metadata\":{\"name\":\"dry\"},\"spec\":{\"image\":\"x\"}}"
  expect_fail "cr: dry-run stored nothing" "crontabs.$G \"dry\" not found" k get ct dry -n "$C"

  # a second version, conversion None
  expect_eq "cr: read in v1beta1" "$G/v1beta1 2" \
    k get "crontabs.v1beta1.$G" daily -n "$C" -o 'jsonpath={.apiVersion} {.spec.replicas}'
  expect_out "cr: create in v1beta1" "^crontab.$G/weekly created$" k create -n "$C" -f - <<<"{\"apiVersion\":\"$G/v1beta1\",\"kind\":\"CronTab\",\"metadata\":{\"name\":\"weekly\"},\"spec\":{\"image\":\"x\",\"extra\":1}}"
  expect_eq "cr: v1beta1 object read in v1" "$G/v1 x" k get "crontabs.v1.$G" weekly -n "$C" -o 'jsonpath={.apiVersion} {.spec.image}'

  # watch sees the deletion of the CRD's objects
  expect_out "cr: delete" "crontab.$G \"weekly\" deleted" k delete ct weekly -n "$C"
  expect_out "crd: delete" "customresourcedefinition.apiextensions.k8s.io \"$CRD\" deleted" k delete crd "$CRD" --timeout=30s
  expect_fail "crd: routes gone" "the server could not find the requested resource" \
    k get --raw "/apis/$G/v1/namespaces/$C/crontabs"
  expect_out "crd: recreated" "^customresourcedefinition.apiextensions.k8s.io/$CRD created$" k apply -f "$M/crd.yaml"
  expect_out "crd: established again" "condition met" k wait --for condition=established --timeout=20s "crd/$CRD"
  expect_out "crd: objects went with it" "No resources found in $C namespace." k get "crontabs.$G" -n "$C"
  expect_out "crd: cleanup" "deleted" k delete crd "$CRD" --timeout=30s
  k delete ns "$C" --wait=false >/dev/null 2>&1 || true
  run_crd_rule_check_cases
}

# A CRD whose rule does not type-check, or may cost too much, is refused when it is written,
# with upstream's cause (cel-go's error text, the estimated cost and its fix hint).
run_crd_rule_check_cases() {
  local G="rules.$NS.example.com" M="$WORK/manifests-$NS-crd-rules"
  mkdir -p "$M"
  local props='{replicas: {type: integer}, tags: {type: array, items: {type: string}}}'
  crd_with_rule() { # RULE PROPS
    cat <<Y
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: checks.$G
spec:
  group: $G
  scope: Namespaced
  names: {plural: checks, singular: check, kind: Check}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: $2
            x-kubernetes-validations:
            - rule: |-
                $1
Y
  }
  crd_with_rule 'self.replicas == foo' "$props" >"$M/undeclared.yaml"
  expect_fail "crd rules: undeclared reference" \
    "compilation failed: ERROR: <input>:1:18: undeclared reference to 'foo' (in container '')" \
    k apply -f "$M/undeclared.yaml"
  crd_with_rule 'self.replicas == "a"' "$props" >"$M/mismatch.yaml"
  expect_fail "crd rules: no matching overload" \
    "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'" \
    k apply -f "$M/mismatch.yaml"
  crd_with_rule 'self.replicas + 1' "$props" >"$M/notbool.yaml"
  expect_fail "crd rules: must be bool" "cel expression must evaluate to a bool" k apply -f "$M/notbool.yaml"
  crd_with_rule "self.tags.all(t, t.matches('^[a-z]+\$'))" "$props" >"$M/cost.yaml"
  expect_fail "crd rules: estimated cost over budget" \
    "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)" \
    k apply -f "$M/cost.yaml"
  crd_with_rule "self.tags.all(t, t.matches('^[a-z]+\$'))" '{tags: {type: array, maxItems: 10, items: {type: string, maxLength: 20}}}' >"$M/bounded.yaml"
  expect_out "crd rules: bounded rule accepted" "^customresourcedefinition.apiextensions.k8s.io/checks.$G created$" \
    k apply -f "$M/bounded.yaml"
  k delete crd "checks.$G" --wait=false >/dev/null 2>&1 || true
}
