# Sourced by e2e/validate.sh: updates kube-apiserver 1.28.7 refuses, each as `kubectl patch`
# against objects created first; what they print is e2e/expected/validate-update-errors.txt,
# recorded against kube-apiserver 1.28.7. K is the kubectl command to run.
update_errors() {
  $K create -f - >/dev/null <<'Y'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: upd-sts, namespace: default}
spec:
  serviceName: s
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: upd-job, namespace: default}
spec:
  suspend: true
  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}
---
apiVersion: v1
kind: Secret
metadata: {name: upd-secret, namespace: default}
type: Opaque
---
apiVersion: v1
kind: Service
metadata: {name: upd-svc, namespace: default}
spec: {clusterIP: 10.0.0.201, ports: [{port: 80}]}
Y
  $K patch statefulset upd-sts --type=json -p '[{"op":"replace","path":"/spec/serviceName","value":"t"}]' 2>&1
  $K patch statefulset upd-sts --type=json -p '[{"op":"replace","path":"/spec/replicas","value":3},{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"j"}]' 2>&1
  $K patch job upd-job --type=json -p '[{"op":"replace","path":"/spec/completions","value":5}]' 2>&1
  $K patch job upd-job --type=json -p '[{"op":"add","path":"/spec/template/spec/nodeSelector","value":{"x":"y"}}]' 2>&1
  $K patch job upd-job --type=json -p '[{"op":"replace","path":"/spec/completionMode","value":"Indexed"}]' 2>&1
  $K patch secret upd-secret --type=json -p '[{"op":"replace","path":"/type","value":"kubernetes.io/tls"}]' 2>&1
  $K patch service upd-svc --type=json -p '[{"op":"replace","path":"/spec/clusterIP","value":"10.0.0.202"}]' 2>&1
  $K delete statefulset/upd-sts job/upd-job secret/upd-secret service/upd-svc >/dev/null 2>&1
}
