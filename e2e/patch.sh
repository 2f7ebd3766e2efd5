# Patch and apply cases: client-side apply (create, change one container's image, remove an
# env var), edit, label, annotate, scale, set image and each `patch --type`; server-side apply
# by two field managers (conflict, --force-conflicts), managedFields, and `diff -f`. Run once
# per (backend, kubectl) in their own namespace $NS-patch.

ssa_manifest() { # ssa_manifest FILE REPLICAS IMAGE
  cat >"$M/$1" <<Y
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ssa
  namespace: $PNS
spec:
  replicas: $2
  selector:
    matchLabels: {app: ssa}
  template:
    metadata:
      labels: {app: ssa}
    spec:
      containers:
      - name: c
        image: $3
Y
  printf '%s' "$M/$1"
}

run_server_side_apply_cases() {
  local s1 s2 s3 s4 get=(k get deploy ssa -n "$PNS")
  s1=$(ssa_manifest s1.yaml 2 c:1)
  s2=$(ssa_manifest s2.yaml 3 c:1)
  s3=$(ssa_manifest s3.yaml 3 c:2)
  expect_out "apply --server-side creates" '^deployment.apps/ssa serverside-applied$' \
    k apply --server-side --field-manager=m1 -f "$s1"
  expect_eq "managedFields name the applier" 'm1/Apply' "${get[@]}" \
    -o 'jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}{end}'
  expect_out "applier owns replicas" '"f:replicas":\{\}' "${get[@]}" \
    -o 'jsonpath={.metadata.managedFields[0].fieldsV1.f:spec}'
  local rv; rv=$("${get[@]}" -o 'jsonpath={.metadata.resourceVersion}')
  expect_out "apply --server-side again" '^deployment.apps/ssa serverside-applied$' \
    k apply --server-side --field-manager=m1 -f "$s1"
  expect_eq "an unchanged apply writes nothing" "$rv" "${get[@]}" -o 'jsonpath={.metadata.resourceVersion}'
  expect_fail "a second manager conflicts" 'conflict with "m1": .spec.replicas' \
    k apply --server-side --field-manager=m2 -f "$s2"
  expect_eq "the conflict changed nothing" '2' "${get[@]}" -o 'jsonpath={.spec.replicas}'
  expect_out "--force-conflicts takes ownership" '^deployment.apps/ssa serverside-applied$' \
    k apply --server-side --force-conflicts --field-manager=m2 -f "$s2"
  expect_eq "forced value" '3' "${get[@]}" -o 'jsonpath={.spec.replicas}'
  expect_eq "both managers listed" 'm1 m2 ' "${get[@]}" \
    -o 'jsonpath={range .metadata.managedFields[*]}{.manager} {end}'
  expect_fail "m1 now conflicts with m2" 'conflict with "m2": .spec.replicas' \
    k apply --server-side --field-manager=m1 -f "$s1"
  expect_out "a manager of a non-apply write is recorded" 'patched' \
    k patch deploy ssa -n "$PNS" --type=merge -p '{"metadata":{"labels":{"x":"y"}}}'
  expect_out "kubectl-patch owns its label" 'kubectl-patch/Update' "${get[@]}" \
    -o 'jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}'
  expect_fail "diff -f prints the change" 'image: c:2' k diff -f "$s3"
  expect_fail "diff -f --server-side prints the change" 'image: c:2' k diff --server-side --field-manager=m2 --force-conflicts -f "$s3"
  expect_eq "diff changed nothing" 'c:1' "${get[@]}" -o 'jsonpath={.spec.template.spec.containers[0].image}'
  expect_out "diff -f of the applied state is empty" '^$' k diff --server-side --field-manager=m2 -f "$s2"
  # m2 stops applying the image: it stays (m1 owns it too); replicas m2 alone owned goes.
  s4="$M/s4.yaml"
  sed '/replicas:/d' "$s2" >"$s4"
  expect_out "apply without a field" 'serverside-applied' k apply --server-side --field-manager=m2 -f "$s4"
  expect_eq "the no-longer-applied field is removed (then defaulted)" '1' "${get[@]}" -o 'jsonpath={.spec.replicas}'
  # A field the schema does not declare: upstream's field manager refuses the configuration
  # (a 500, whatever --validate says), naming the first undeclared field of each map.
  sed 's/^spec:$/spec:\n  replica: 2/; s/^  name: ssa$/  name: ssa\n  bogus: 1/' "$s2" >"$M/s5.yaml"
  local want="Error from server: failed to create typed patch object ($PNS/ssa; apps/v1, Kind=Deployment): errors:
  .metadata.bogus: field not declared in schema
  .spec.replica: field not declared in schema"
  if ! run_cmd k apply --server-side --field-manager=m2 -f "$M/s5.yaml" && [[ "$OUT" == *"$want"* ]]; then
    pass "apply with undeclared fields is refused as upstream"
  else
    fail "apply with undeclared fields is refused as upstream (want: $want; got: $OUT)"
  fi
  expect_eq "nothing changed" '1' "${get[@]}" -o 'jsonpath={.spec.replicas}'
}

deployment_manifest() { # deployment_manifest FILE IMAGE_B WITH_Y
  local y=""
  if [ "$3" = yes ]; then y=$'\n        - name: "Y"\n          value: "2"'; fi
  cat >"$M/$1" <<Y
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: $PNS
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      - name: a
        image: a:1
        env:
        - name: "X"
          value: "1"$y
      - name: b
        image: $2
Y
  printf '%s' "$M/$1"
}

run_patch_cases() {
  M="$WORK/manifests-$NS-patch"; mkdir -p "$M"
  PNS="$NS-patch"
  local d1 d2 d3 editor
  expect_out "patch: namespace" "^namespace/$PNS created$" k create ns "$PNS"
  d1=$(deployment_manifest d1.yaml b:1 yes)
  d2=$(deployment_manifest d2.yaml b:2 yes)
  d3=$(deployment_manifest d3.yaml b:2 no)
  local get=(k get deploy app -n "$PNS")
  local images='{range .spec.template.spec.containers[*]}{.name}={.image} {end}'
  local env='{range .spec.template.spec.containers[0].env[*]}{.name}={.value} {end}'

  expect_out "apply -f creates" '^deployment.apps/app created$' k apply -f "$d1"
  expect_out "apply -f changes one image" '^deployment.apps/app configured$' k apply -f "$d2"
  expect_eq "the other container is untouched" 'a=a:1 b=b:2 ' "${get[@]}" -o "jsonpath=$images"
  expect_eq "env intact after image change" 'X=1 Y=2 ' "${get[@]}" -o "jsonpath=$env"
  expect_out "apply -f removes an env var" '^deployment.apps/app configured$' k apply -f "$d3"
  expect_eq "the removed env var is gone" 'X=1 ' "${get[@]}" -o "jsonpath=$env"
  expect_out "last-applied annotation kept" '"b:2"' "${get[@]}" \
    -o 'jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}'
  expect_out "apply -f unchanged" '^deployment.apps/app unchanged$' k apply -f "$d3"

  editor="$M/editor.sh"
  printf '#!/bin/sh\nsed -i "s/image: a:1/image: a:9/" "$1"\n' >"$editor"; chmod +x "$editor"
  EDITOR="$editor" expect_out "edit with a sed editor" '^deployment.apps/app edited$' k edit deploy app -n "$PNS"
  expect_eq "edit changed the image" 'a=a:9 b=b:2 ' "${get[@]}" -o "jsonpath=$images"
  expect_out "label" '^deployment.apps/app labeled$' k label deploy app -n "$PNS" tier=web
  expect_eq "label set" 'web' "${get[@]}" -o 'jsonpath={.metadata.labels.tier}'
  expect_out "annotate" '^deployment.apps/app annotated$' k annotate deploy app -n "$PNS" note=hi
  expect_eq "annotation set" 'hi' "${get[@]}" -o 'jsonpath={.metadata.annotations.note}'
  expect_out "scale" '^deployment.apps/app scaled$' k scale deploy app -n "$PNS" --replicas=3
  expect_eq "scaled replicas" '3' "${get[@]}" -o 'jsonpath={.spec.replicas}'
  expect_out "set image" '^deployment.apps/app image updated$' k set image deploy/app -n "$PNS" b=b:3
  expect_eq "set image changed one container" 'a=a:9 b=b:3 ' "${get[@]}" -o "jsonpath=$images"

  expect_out "patch --type=strategic" 'patched' k patch deploy app -n "$PNS" --type=strategic \
    -p '{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"Z","value":"3"}]}]}}}}'
  # New elements go first when the patch gives no order, as upstream.
  expect_eq "strategic merged env by name" 'Z=3 X=1 ' "${get[@]}" -o "jsonpath=$env"
  expect_out "patch --type=strategic \$patch: delete" 'patched' k patch deploy app -n "$PNS" --type=strategic \
    -p '{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","$patch":"delete"}]}]}}}}'
  expect_eq "strategic deleted env X" 'Z=3 ' "${get[@]}" -o "jsonpath=$env"
  expect_out "patch --type=merge" 'patched' k patch deploy app -n "$PNS" --type=merge -p '{"spec":{"replicas":2}}'
  expect_eq "merge patch set replicas" '2' "${get[@]}" -o 'jsonpath={.spec.replicas}'
  expect_out "patch --type=json" 'patched' k patch deploy app -n "$PNS" --type=json \
    -p '[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"b:4"}]'
  expect_eq "json patch replaced an image" 'a=a:9 b=b:4 ' "${get[@]}" -o "jsonpath=$images"
  expect_fail "json patch failed test is 422" 'value did not match' k patch deploy app -n "$PNS" --type=json \
    -p '[{"op":"test","path":"/spec/replicas","value":7}]'
  expect_fail "strategic patch without merge key is 400" 'does not contain declared merge key: name' \
    k patch deploy app -n "$PNS" --type=strategic -p '{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}'
  run_server_side_apply_cases
  expect_out "delete patch namespace" "^namespace \"$PNS\" deleted" k delete ns "$PNS" --wait=false
}
