"""pods/exec through kapi with the official Python client's `kubernetes.stream` (WebSocket,
`v4.channel.k8s.io`: forwarded by kapi to the kubelet untranslated, as kube-apiserver does).
Prints PASS/FAIL lines.

    python exec_stream.py KUBECONFIG POD
"""
import sys

from kubernetes import client, config
from kubernetes.stream import stream

failed = 0


def check(name, ok, detail=""):
    global failed
    print(("PASS: " if ok else "FAIL: ") + "[python] " + name + ("" if ok else f" ({detail})"))
    failed += 0 if ok else 1


def main():
    config.load_kube_config(sys.argv[1])
    pod = sys.argv[2]
    api = client.CoreV1Api()
    out = stream(api.connect_get_namespaced_pod_exec, pod, "default",
                 command=["echo", "hello", "python"], stderr=True, stdin=False,
                 stdout=True, tty=False)
    check("exec: stdout", out == "hello python\n", repr(out))
    resp = stream(api.connect_get_namespaced_pod_exec, pod, "default",
                  command=["sh", "-c", "echo out; echo err >&2; exit 5"], stderr=True,
                  stdin=False, stdout=True, tty=False, _preload_content=False)
    resp.run_forever(timeout=10)
    check("exec: the exit code", resp.returncode == 5, repr(resp.returncode))
    check("exec: stderr apart", resp.read_stderr() == "err\n", "stderr")
    resp.close()
    resp = stream(api.connect_get_namespaced_pod_exec, pod, "default", command=["cat"],
                  stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
    resp.write_stdin("typed in\n")
    got = ""
    for _ in range(50):
        resp.update(timeout=0.2)
        got += resp.read_stdout() if resp.peek_stdout() else ""
        if got:
            break
    check("exec: stdin to the command", got == "typed in\n", repr(got))
    resp.close()
    sys.exit(1 if failed else 0)


main()
