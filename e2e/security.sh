#!/usr/bin/env bash
# Security end-to-end: secrets on disk and refusals over HTTP/2.
#  - The data, store and PKI directories are 0700 and their secret files 0600; looser modes
#    left by an older kapi are tightened at start-up with a log line.
#  - --encryption-provider-config: a Secret's bytes in the embedded store's files and in etcd
#    (read back through etcd's JSON gateway) are ciphertext with upstream's prefix
#    (k8s:enc:<provider>:v1:<key>:); reads decrypt; an identity-first configuration writes plain
#    and still reads encrypted values; a second provider reads what the first wrote after a
#    rotation; resources not named stay plain; a bad configuration stops start-up.
#  - A body over 3 MiB gets upstream's 413 Status over HTTP/2 as over HTTP/1.1 (curl with the
#    kubeconfig's client certificate), and 48 KiB of headers are served over HTTP/2 (431 Status past upstream's
#    1 MiB is in crates/server/tests/limits.rs: curl cannot send that much).
#
#   KAPI_BIN=path/to/kapi-apiserver e2e/security.sh   (default: builds the debug binary)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=e2e/lib.sh
. "$ROOT/e2e/lib.sh"

e2e_init security
e2e_start_etcd

key() { head -c 32 /dev/urandom | base64; }
# enc_config FILE PROVIDER:NAME:SECRET...: an EncryptionConfiguration for secrets (providers in
# order; "identity" for the identity provider).
enc_config() {
  local file=$1; shift
  {
    echo "apiVersion: apiserver.config.k8s.io/v1"
    echo "kind: EncryptionConfiguration"
    echo "resources:"
    echo "- resources: [secrets]"
    echo "  providers:"
    for p in "$@"; do
      if [ "$p" = identity ]; then echo "  - identity: {}"; continue; fi
      IFS=: read -r prov name secret <<<"$p"
      printf '  - %s:\n      keys:\n      - name: %s\n        secret: %s\n' "$prov" "$name" "$secret"
    done
  } >"$file"
}
mode() { stat -c %a "$1"; }
# in_store TEXT: how many of the embedded store's files contain TEXT.
in_store() { { grep -l -F -- "$1" "$WORK/kapi-emb/store/"kapi.db* 2>/dev/null || true; } | wc -l; }
# etcd_value KEY: the raw value of KEY in etcd (through its JSON gateway).
etcd_value() {
  curl -s "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d "{\"key\":\"$(printf %s "$1" | base64 -w0)\"}" \
    | jq -r '.kvs[0].value // empty' | base64 -d
}
SECRET_B64=$(printf 'TopSecretValue-%s' "$RANDOM$RANDOM" | base64)
SECRET_B64_2=$(printf 'AnotherSecret-%s' "$RANDOM$RANDOM" | base64)
CBC_KEY=$(key); GCM_KEY=$(key); BOX_KEY=$(key)

# ---- the embedded store ------------------------------------------------------------------
LABEL=security-embedded
enc_config "$WORK/cbc.yaml" "aescbc:key1:$CBC_KEY" identity
start_kapi_embedded emb --encryption-provider-config "$WORK/cbc.yaml"
D="$WORK/kapi-emb"
expect_eq "data, store and PKI directories are 0700" "700 700 700" bash -c "echo $(mode "$D") $(mode "$D/store") $(mode "$D/pki")"
expect_eq "store files, keys and the kubeconfig are 0600" "600 600 600 600 600 600 600" \
  bash -c "stat -c %a $D/store/kapi.db $D/store/kapi.db-wal $D/store/kapi.lock $D/pki/ca.key $D/pki/apiserver.key $D/pki/admin.key $D/admin.kubeconfig | tr '\n' ' ' | sed 's/ \$//'"
expect_ok "create a secret" k create secret generic s1 --from-literal=password="$(base64 -d <<<"$SECRET_B64")"
expect_ok "create a configmap" k create configmap c1 --from-literal=visible=PlainConfigValue
expect_eq "the secret's value is nowhere in the store's files" 0 in_store "$SECRET_B64"
expect_eq "the stored secret carries upstream's aescbc prefix" 1 bash -c "grep -l -F 'k8s:enc:aescbc:v1:key1:' $D/store/kapi.db* | wc -l | tr -d ' ' | sed 's/^[1-9][0-9]*$/1/'"
expect_eq "resources the configuration does not name stay plain" 1 bash -c "grep -l -F PlainConfigValue $D/store/kapi.db* | wc -l | sed 's/^[1-9][0-9]*$/1/'"
expect_eq "reads decrypt" "$SECRET_B64" k get secret s1 -o 'jsonpath={.data.password}'

# Looser modes (an older kapi's) are tightened at start-up.
kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""
chmod 755 "$D" "$D/store" "$D/pki"; chmod 644 "$D/store/kapi.db" "$D/store/kapi.lock" "$D/pki/ca.key"
# Identity first: new writes are plain, encrypted values still read.
enc_config "$WORK/identity.yaml" identity "aescbc:key1:$CBC_KEY"
start_kapi_embedded emb --encryption-provider-config "$WORK/identity.yaml"
expect_eq "loose modes are tightened at start-up" "700 700 700 600 600 600" bash -c "echo $(mode "$D") $(mode "$D/store") $(mode "$D/pki") $(mode "$D/store/kapi.db") $(mode "$D/store/kapi.lock") $(mode "$D/pki/ca.key")"
expect_out "with a log line" "tightened permissions" cat "$WORK/kapi-emb.log"
expect_eq "identity first: the encrypted secret still reads" "$SECRET_B64" k get secret s1 -o 'jsonpath={.data.password}'
expect_ok "identity first: create another secret" k create secret generic s2 --from-literal=password="$(base64 -d <<<"$SECRET_B64_2")"
expect_eq "identity first: it is stored plain" 1 bash -c "grep -l -F '$SECRET_B64_2' $D/store/kapi.db* | wc -l | sed 's/^[1-9][0-9]*$/1/'"
kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""

# A bad configuration stops start-up with every problem named.
printf 'apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n' >"$WORK/bad.yaml"
expect_fail "a bad encryption configuration stops start-up" "not a valid AES key length" \
  timeout 30 "$KAPI_BIN" --secure-port "$(free_port)" --data-dir "$WORK/kapi-bad" --encryption-provider-config "$WORK/bad.yaml"

# ---- etcd ----------------------------------------------------------------------------------
LABEL=security-etcd
enc_config "$WORK/gcm.yaml" "aesgcm:key1:$GCM_KEY"
start_kapi_on_etcd enc --encryption-provider-config "$WORK/gcm.yaml"
expect_ok "create a secret" k create secret generic s1 --from-literal=password="$(base64 -d <<<"$SECRET_B64")"
expect_out "the value in etcd carries upstream's aesgcm prefix" "^k8s:enc:aesgcm:v1:key1:" etcd_value /registry-enc/secrets/default/s1
in_etcd() { etcd_value "$1" | { grep -c -F -- "$2" || true; }; }
expect_eq "the secret's value is not in etcd" 0 in_etcd /registry-enc/secrets/default/s1 "$SECRET_B64"
expect_eq "reads decrypt" "$SECRET_B64" k get secret s1 -o 'jsonpath={.data.password}'
# Rotation: secretbox now encrypts, aesgcm still reads.
enc_config "$WORK/rotated.yaml" "secretbox:key2:$BOX_KEY" "aesgcm:key1:$GCM_KEY"
start_kapi_on_etcd enc --encryption-provider-config "$WORK/rotated.yaml"
expect_eq "after a rotation the old value reads" "$SECRET_B64" k get secret s1 -o 'jsonpath={.data.password}'
expect_ok "update the secret" k label secret s1 rotated=yes
expect_out "an update rewrites it with the new first provider" "^k8s:enc:secretbox:v1:key2:" etcd_value /registry-enc/secrets/default/s1
expect_eq "and it reads" "$SECRET_B64" k get secret s1 -o 'jsonpath={.data.password}'

# ---- refusals over HTTP/2 and HTTP/1.1 ----------------------------------------------------------
LABEL=security-h2
AUTH="$WORK/auth"; mkdir -p "$AUTH"
grep client-certificate-data "$KUBECONFIG_FILE" | awk '{print $2}' | base64 -d >"$AUTH/client.crt"
grep client-key-data "$KUBECONFIG_FILE" | awk '{print $2}' | base64 -d >"$AUTH/client.key"
python3 -c "import json; print(json.dumps({'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'big'},'data':{'a':'x'*(4<<20)}}))" >"$WORK/big.json"
kcurl() { curl -sS --cacert "$CA" --cert "$AUTH/client.crt" --key "$AUTH/client.key" "$@"; }
# big_post PROTO: the status code and the Status (code, reason, message) of a 4 MiB create.
big_post() {
  local out
  out=$(kcurl "--$1" -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/big.json" \
    -w '\n%{http_code}' "https://127.0.0.1:$PORT/api/v1/namespaces/default/configmaps") || return 1
  printf '%s %s\n' "$(tail -1 <<<"$out")" "$(sed '$d' <<<"$out" | jq -c '{code,reason,message}')"
}
for proto in http2 http1.1; do
  expect_eq "$proto: a body over 3 MiB gets the 413 Status" \
    '413 {"code":413,"reason":"RequestEntityTooLarge","message":"Request entity too large: limit is 3145728"}' \
    big_post "$proto"
done
HDR="$(head -c 49152 /dev/zero | tr '\0' a)"
expect_eq "http2: 48 KiB of headers are served (past the 16 KiB header list HTTP/2 servers often allow)" 200 \
  kcurl --http2 -o /dev/null -w '%{http_code}' -H "X-Large: $HDR" "https://127.0.0.1:$PORT/api/v1/namespaces"
kill "$KAPI_PID"; wait "$KAPI_PID" 2>/dev/null; KAPI_PID=""

summary
