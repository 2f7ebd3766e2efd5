"""The official Python client (`kubernetes` from PyPI) against kapi, through its typed APIs.

Run by e2e/clients.sh:  KUBECONFIG=<admin kubeconfig> python test_client.py <label>
Prints one PASS/FAIL line per case and exits non-zero when any case fails. Every case checks
what the client hands back: typed objects, fields, HTTP codes, reasons and messages.
"""

import base64
import json
import os
import sys
import time
import unittest
import uuid

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

LABEL = "python"
NS = "py-e2e-" + uuid.uuid4().hex[:6]
MANAGER = "py-e2e"


def meta(name, labels=None):
    return client.V1ObjectMeta(name=name, labels=labels)


def status_of(exc):
    """The metav1.Status body of an ApiException."""
    return json.loads(exc.body)


def eventually(what, check, seconds=20):
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.2)


class ClientCases(unittest.TestCase):
    core: client.CoreV1Api
    apps: client.AppsV1Api

    @classmethod
    def setUpClass(cls):
        config.load_kube_config(config_file=os.environ["KUBECONFIG"])
        cls.core = client.CoreV1Api()
        cls.apps = client.AppsV1Api()
        cls.core.create_namespace(client.V1Namespace(metadata=meta(NS)))

    @classmethod
    def tearDownClass(cls):
        try:
            cls.core.delete_namespace(NS)
        except ApiException:
            pass

    def assertApiError(self, exc, code, reason, message):
        self.assertEqual(exc.status, code)
        body = status_of(exc)
        self.assertEqual(body["kind"], "Status")
        self.assertEqual(body["status"], "Failure")
        self.assertEqual(body["code"], code)
        self.assertEqual(body["reason"], reason)
        self.assertEqual(body["message"], message)
        return body

    def test_01_namespace_crud(self):
        """namespace: create, read, label, list by label, delete answers with the namespace"""
        name = NS + "-x"
        created = self.core.create_namespace(client.V1Namespace(metadata=meta(name)))
        self.assertIsInstance(created, client.V1Namespace)
        self.assertEqual((created.kind, created.api_version), ("Namespace", "v1"))
        self.assertEqual(created.status.phase, "Active")
        self.assertEqual(created.spec.finalizers, ["kubernetes"])
        got = self.core.read_namespace(name)
        self.assertEqual(got.metadata.uid, created.metadata.uid)
        patched = self.core.patch_namespace(
            name, {"metadata": {"labels": {"suite": NS}}},
            _content_type="application/merge-patch+json")
        self.assertEqual(patched.metadata.labels["suite"], NS)
        listed = self.core.list_namespace(label_selector="suite=" + NS)
        self.assertEqual([n.metadata.name for n in listed.items], [name])
        # upstream's namespace storage returns the object (ReturnDeletedObject), now terminating
        deleted = self.core.delete_namespace(name)
        self.assertEqual(deleted["kind"], "Namespace")
        self.assertEqual(deleted["metadata"]["name"], name)
        self.assertEqual(deleted["status"]["phase"], "Terminating")
        self.assertIn("deletionTimestamp", deleted["metadata"])

    def test_02_configmap_crud(self):
        """configmap: create without apiVersion/kind, read, replace, delete answers a Status"""
        body = client.V1ConfigMap(metadata=meta("cm"), data={"a": "1"})
        created = self.core.create_namespaced_config_map(NS, body)
        self.assertIsInstance(created, client.V1ConfigMap)
        self.assertEqual((created.kind, created.api_version), ("ConfigMap", "v1"))
        self.assertEqual(created.metadata.namespace, NS)
        self.assertEqual(created.data, {"a": "1"})
        created.data["b"] = "2"
        replaced = self.core.replace_namespaced_config_map("cm", NS, created)
        self.assertEqual(replaced.data, {"a": "1", "b": "2"})
        self.assertGreater(int(replaced.metadata.resource_version),
                           int(created.metadata.resource_version))
        self.assertEqual(self.core.read_namespaced_config_map("cm", NS).data["b"], "2")
        # The client types this answer as a plain object: a metav1.Status.
        status = self.core.delete_namespaced_config_map("cm", NS)
        self.assertEqual((status["kind"], status["status"]), ("Status", "Success"))
        self.assertEqual(status["details"],
                         {"name": "cm", "kind": "configmaps", "uid": created.metadata.uid})
        # Kept by a finalizer: the answer is the object, marked for deletion.
        held = client.V1ConfigMap(metadata=client.V1ObjectMeta(
            name="held", finalizers=["example.com/hold"]))
        self.core.create_namespaced_config_map(NS, held)
        marked = self.core.delete_namespaced_config_map("held", NS)
        self.assertEqual(marked["kind"], "ConfigMap")
        self.assertIn("deletionTimestamp", marked["metadata"])
        self.assertEqual(marked["metadata"]["finalizers"], ["example.com/hold"])
        self.core.patch_namespaced_config_map(
            "held", NS, {"metadata": {"finalizers": None}},
            _content_type="application/merge-patch+json")
        with self.assertRaises(ApiException) as ctx:
            self.core.read_namespaced_config_map("held", NS)
        self.assertEqual(ctx.exception.status, 404)

    def test_03_secret_crud(self):
        """secret: stringData is stored base64 in data; replace; delete"""
        body = client.V1Secret(metadata=meta("sec"), string_data={"user": "admin"})
        created = self.core.create_namespaced_secret(NS, body)
        self.assertEqual(created.type, "Opaque")
        self.assertEqual(created.data, {"user": base64.b64encode(b"admin").decode()})
        self.assertIsNone(created.string_data)
        created.data["pass"] = base64.b64encode(b"s3cret").decode()
        replaced = self.core.replace_namespaced_secret("sec", NS, created)
        self.assertEqual(sorted(replaced.data), ["pass", "user"])
        status = self.core.delete_namespaced_secret("sec", NS)
        self.assertEqual((status["kind"], status["status"]), ("Status", "Success"))

    def test_04_service_crud(self):
        """service: a cluster IP is allocated; delete answers with the V1Service"""
        body = client.V1Service(
            metadata=meta("web"),
            spec=client.V1ServiceSpec(
                selector={"app": "web"},
                ports=[client.V1ServicePort(port=80, target_port=8080)]))
        created = self.core.create_namespaced_service(NS, body)
        self.assertEqual(created.spec.type, "ClusterIP")
        self.assertTrue(created.spec.cluster_ip)
        self.assertEqual(created.spec.cluster_ips, [created.spec.cluster_ip])
        self.assertEqual(created.spec.ports[0].protocol, "TCP")
        self.assertEqual(created.spec.ports[0].target_port, 8080)
        patched = self.core.patch_namespaced_service(
            "web", NS, {"metadata": {"annotations": {"owner": "py"}}})
        self.assertEqual(patched.metadata.annotations, {"owner": "py"})
        deleted = self.core.delete_namespaced_service("web", NS)
        self.assertIsInstance(deleted, client.V1Service)
        self.assertEqual(deleted.metadata.uid, created.metadata.uid)
        self.assertEqual(deleted.spec.cluster_ip, created.spec.cluster_ip)
        with self.assertRaises(ApiException) as ctx:
            self.core.read_namespaced_service("web", NS)
        self.assertEqual(ctx.exception.status, 404)

    def deployment(self, name, image="nginx:1.27"):
        labels = {"app": name}
        return client.V1Deployment(
            metadata=meta(name),
            spec=client.V1DeploymentSpec(
                replicas=1,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels),
                    spec=client.V1PodSpec(containers=[
                        client.V1Container(name="app", image=image)]))))

    def test_05_deployment_crud_and_status(self):
        """deployment: defaults, replace, status subresource, strategic patch by container name"""
        created = self.apps.create_namespaced_deployment(NS, self.deployment("dep"))
        self.assertEqual(created.kind, "Deployment")
        self.assertEqual(created.metadata.generation, 1)
        self.assertEqual(created.spec.strategy.type, "RollingUpdate")
        self.assertEqual(created.spec.template.spec.restart_policy, "Always")
        created.spec.replicas = 3
        replaced = self.apps.replace_namespaced_deployment("dep", NS, created)
        self.assertEqual((replaced.spec.replicas, replaced.metadata.generation), (3, 2))

        replaced.status = client.V1DeploymentStatus(
            replicas=3, updated_replicas=3, ready_replicas=2, available_replicas=2,
            observed_generation=2)
        replaced.spec.replicas = 7  # ignored: /status changes only the status
        updated = self.apps.replace_namespaced_deployment_status("dep", NS, replaced)
        self.assertEqual(updated.status.ready_replicas, 2)
        self.assertEqual(updated.spec.replicas, 3)
        read = self.apps.read_namespaced_deployment_status("dep", NS)
        self.assertEqual((read.status.replicas, read.status.observed_generation), (3, 2))

        patched = self.apps.patch_namespaced_deployment(
            "dep", NS,
            {"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "nginx:1.28"}]}}}},
            _content_type="application/strategic-merge-patch+json")
        containers = patched.spec.template.spec.containers
        self.assertEqual([(c.name, c.image) for c in containers], [("app", "nginx:1.28")])
        self.assertEqual(containers[0].image_pull_policy, "IfNotPresent")
        status = self.apps.delete_namespaced_deployment("dep", NS)
        self.assertEqual((status["kind"], status["status"]), ("Status", "Success"))
        self.assertEqual(status["details"]["group"], "apps")

    def test_06_list_selectors_and_paging(self):
        """list: label and field selectors, limit/_continue with remaining_item_count"""
        for i in range(5):
            self.core.create_namespaced_secret(
                NS, client.V1Secret(metadata=meta("page-%d" % i, {"app": "py", "i": str(i)})))
        self.core.create_namespaced_secret(
            NS, client.V1Secret(metadata=meta("other", {"app": "other"})))
        by_label = self.core.list_namespaced_secret(NS, label_selector="app=py")
        self.assertEqual([s.metadata.name for s in by_label.items],
                         ["page-%d" % i for i in range(5)])
        self.assertEqual(by_label.kind, "SecretList")
        by_set = self.core.list_namespaced_secret(NS, label_selector="app=py,i in (1,3)")
        self.assertEqual([s.metadata.name for s in by_set.items], ["page-1", "page-3"])
        by_field = self.core.list_namespaced_secret(NS, field_selector="metadata.name=other")
        self.assertEqual([s.metadata.name for s in by_field.items], ["other"])
        not_py = self.core.list_namespaced_secret(
            NS, field_selector="metadata.name!=other", label_selector="app")
        self.assertEqual(len(not_py.items), 5)

        first = self.core.list_namespaced_secret(NS, limit=2)
        self.assertEqual([s.metadata.name for s in first.items], ["other", "page-0"])
        self.assertTrue(first.metadata._continue)
        self.assertEqual(first.metadata.remaining_item_count, 4)
        names = [s.metadata.name for s in first.items]
        token = first.metadata._continue
        while token:
            page = self.core.list_namespaced_secret(NS, limit=2, _continue=token)
            self.assertEqual(page.metadata.resource_version, first.metadata.resource_version)
            names += [s.metadata.name for s in page.items]
            token = page.metadata._continue
        self.assertEqual(names, ["other"] + ["page-%d" % i for i in range(5)])

    def test_07_watch_from_resource_version(self):
        """watch: from a list's resourceVersion, every change after it, typed"""
        rv = self.core.list_namespaced_config_map(NS).metadata.resource_version
        self.core.create_namespaced_config_map(
            NS, client.V1ConfigMap(metadata=meta("watched"), data={"v": "1"}))
        self.core.patch_namespaced_config_map(
            "watched", NS, {"data": {"v": "2"}},
            _content_type="application/merge-patch+json")
        self.core.delete_namespaced_config_map("watched", NS)
        seen = []
        w = watch.Watch()
        for event in w.stream(self.core.list_namespaced_config_map, NS,
                              resource_version=rv, timeout_seconds=10):
            obj = event["object"]
            if event["type"] == "BOOKMARK" or obj.metadata.name != "watched":
                continue
            self.assertIsInstance(obj, client.V1ConfigMap)
            seen.append((event["type"], obj.data["v"]))
            if event["type"] == "DELETED":
                w.stop()
        self.assertEqual(seen, [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")])

    def test_08_watch_bookmark_before_timeout(self):
        """watch: with allow_watch_bookmarks a BOOKMARK at the newest revision comes before the timeout"""
        last = self.core.create_namespaced_config_map(
            NS, client.V1ConfigMap(metadata=meta("marked"), data={"v": "1"}))
        last_rv = int(last.metadata.resource_version)
        bookmarks = []
        for event in watch.Watch().stream(
                self.core.list_namespaced_config_map, NS,
                resource_version=last.metadata.resource_version,
                allow_watch_bookmarks=True, timeout_seconds=4):
            if event["type"] == "BOOKMARK":
                bookmarks.append(event["raw_object"])
        self.assertTrue(bookmarks, "no BOOKMARK within the watch's timeout")
        self.assertEqual(bookmarks[0]["kind"], "ConfigMap")
        self.assertEqual(bookmarks[0]["apiVersion"], "v1")
        self.assertGreaterEqual(int(bookmarks[0]["metadata"]["resourceVersion"]), last_rv)

    def test_09_patches(self):
        """patch: merge, JSON, strategic and server-side apply"""
        self.core.create_namespaced_config_map(
            NS, client.V1ConfigMap(metadata=meta("patched", {"a": "1"}), data={"k": "v"}))
        merged = self.core.patch_namespaced_config_map(
            "patched", NS, {"data": {"k": None, "m": "merge"}},
            _content_type="application/merge-patch+json")
        self.assertEqual(merged.data, {"m": "merge"})
        # A list body is sent as a JSON patch.
        jsoned = self.core.patch_namespaced_config_map(
            "patched", NS, [{"op": "add", "path": "/data/j", "value": "json"},
                            {"op": "remove", "path": "/metadata/labels/a"}])
        self.assertEqual(jsoned.data, {"j": "json", "m": "merge"})
        self.assertFalse(jsoned.metadata.labels)
        # A dict body is sent as a strategic merge patch.
        strategic = self.core.patch_namespaced_config_map(
            "patched", NS, {"metadata": {"labels": {"s": "smp"}}})
        self.assertEqual(strategic.metadata.labels, {"s": "smp"})
        applied = self.core.patch_namespaced_config_map(
            "patched", NS,
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "patched"}, "data": {"owned": "apply"}},
            field_manager=MANAGER, _content_type="application/apply-patch+yaml")
        self.assertEqual(applied.data["owned"], "apply")
        managers = {(m.manager, m.operation) for m in applied.metadata.managed_fields}
        self.assertIn((MANAGER, "Apply"), managers)
        # Apply also creates.
        created = self.core.patch_namespaced_config_map(
            "applied-new", NS,
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "applied-new"}, "data": {"x": "y"}},
            field_manager=MANAGER, _content_type="application/apply-patch+yaml")
        self.assertEqual(created.data, {"x": "y"})
        with self.assertRaises(ApiException) as ctx:
            self.core.patch_namespaced_config_map(
                "patched", NS, {"data": {"owned": "other"}},
                field_manager="someone-else", _content_type="application/apply-patch+yaml")
        body = self.assertApiError(
            ctx.exception, 409, "Conflict",
            'Apply failed with 1 conflict: conflict with "py-e2e": .data.owned')
        self.assertEqual(body["details"]["causes"][0]["field"], ".data.owned")

    def test_10_errors_are_status_bodies(self):
        """errors: 404, 409 (exists, stale, precondition) and 422 as ApiException with the Status"""
        with self.assertRaises(ApiException) as ctx:
            self.core.read_namespaced_config_map("nope", NS)
        body = self.assertApiError(ctx.exception, 404, "NotFound", 'configmaps "nope" not found')
        self.assertEqual(body["details"], {"name": "nope", "kind": "configmaps"})

        cm = self.core.create_namespaced_config_map(
            NS, client.V1ConfigMap(metadata=meta("dup")))
        with self.assertRaises(ApiException) as ctx:
            self.core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=meta("dup")))
        self.assertApiError(ctx.exception, 409, "AlreadyExists", 'configmaps "dup" already exists')

        stale = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dup", resource_version="1"))
        with self.assertRaises(ApiException) as ctx:
            self.core.replace_namespaced_config_map("dup", NS, stale)
        self.assertApiError(
            ctx.exception, 409, "Conflict",
            'Operation cannot be fulfilled on configmaps "dup": the object has been modified; '
            'please apply your changes to the latest version and try again')

        with self.assertRaises(ApiException) as ctx:
            self.core.delete_namespaced_config_map(
                "dup", NS, body=client.V1DeleteOptions(
                    preconditions=client.V1Preconditions(uid="not-the-uid")))
        self.assertApiError(
            ctx.exception, 409, "Conflict",
            'Operation cannot be fulfilled on ConfigMap "dup": the UID in the precondition '
            '(not-the-uid) does not match the UID in record (%s). The object might have been '
            'deleted and then recreated' % cm.metadata.uid)

        with self.assertRaises(ApiException) as ctx:
            self.core.create_namespaced_config_map(
                NS, client.V1ConfigMap(metadata=meta("Bad_Name")))
        body = self.assertApiError(
            ctx.exception, 422, "Invalid",
            'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a '
            "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
        self.assertEqual(body["details"]["causes"][0]["field"], "metadata.name")
        self.assertEqual(body["details"]["causes"][0]["reason"], "FieldValueInvalid")


    def test_11_subresources_and_reviews(self):
        """bodies without a Content-Type on /scale, token requests and review objects"""
        self.apps.create_namespaced_deployment(NS, self.deployment("scaled"))
        scale = self.apps.read_namespaced_deployment_scale("scaled", NS)
        self.assertEqual((scale.kind, scale.spec.replicas), ("Scale", 1))
        scale.spec.replicas = 4
        replaced = self.apps.replace_namespaced_deployment_scale("scaled", NS, scale)
        self.assertEqual(replaced.spec.replicas, 4)
        self.assertEqual(self.apps.read_namespaced_deployment("scaled", NS).spec.replicas, 4)
        patched = self.apps.patch_namespaced_deployment_scale(
            "scaled", NS, {"spec": {"replicas": 2}},
            _content_type="application/merge-patch+json")
        self.assertEqual(patched.spec.replicas, 2)

        self.core.create_namespaced_service_account(
            NS, client.V1ServiceAccount(metadata=meta("robot")))
        request = self.core.create_namespaced_service_account_token(
            "robot", NS, client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=["py-e2e"], expiration_seconds=3600)))
        self.assertEqual(request.kind, "TokenRequest")
        self.assertEqual(request.spec.expiration_seconds, 3600)
        self.assertTrue(request.status.token)
        review = client.AuthenticationV1Api().create_token_review(client.V1TokenReview(
            spec=client.V1TokenReviewSpec(token=request.status.token, audiences=["py-e2e"])))
        self.assertTrue(review.status.authenticated)
        self.assertEqual(review.status.user.username, "system:serviceaccount:%s:robot" % NS)
        self.assertEqual(review.status.audiences, ["py-e2e"])

        access = client.AuthorizationV1Api().create_self_subject_access_review(
            client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb="list", resource="pods", namespace=NS))))
        self.assertEqual(access.kind, "SelfSubjectAccessReview")
        self.assertTrue(access.status.allowed)
        whoami = client.AuthenticationV1Api().create_self_subject_review(
            client.V1SelfSubjectReview())
        self.assertIn("system:masters", whoami.status.user_info.groups)

    def test_12_binding_eviction_and_deleted_objects(self):
        """pods/binding and pods/eviction; deletes that answer with the typed object"""
        pod = client.V1Pod(metadata=meta("bound"), spec=client.V1PodSpec(
            containers=[client.V1Container(name="app", image="nginx:1.27")]))
        self.core.create_namespaced_pod(NS, pod)
        # Both answer a Success Status, as kube-apiserver does, which the client's typed
        # return (V1Binding, V1Eviction) cannot hold: read the raw answer.
        answer = self.core.create_namespaced_pod_binding("bound", NS, client.V1Binding(
            metadata=meta("bound"),
            target=client.V1ObjectReference(kind="Node", name="node-1")),
            _preload_content=False)
        self.assertEqual(answer.status, 201)
        self.assertEqual(
            {k: v for k, v in json.loads(answer.data).items() if k != "metadata"},
            {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})
        bound = self.core.read_namespaced_pod("bound", NS)
        self.assertEqual(bound.spec.node_name, "node-1")
        with self.assertRaises(ApiException) as ctx:
            self.core.create_namespaced_pod_binding("bound", NS, client.V1Binding(
                metadata=meta("bound"),
                target=client.V1ObjectReference(kind="Node", name="node-2")))
        self.assertApiError(
            ctx.exception, 409, "Conflict",
            'Operation cannot be fulfilled on pods/binding "bound": '
            'pod bound is already assigned to node "node-1"')

        self.core.create_namespaced_pod(NS, client.V1Pod(
            metadata=meta("evicted"), spec=pod.spec))
        with self.assertRaises(ApiException) as ctx:
            self.core.create_namespaced_pod_eviction("evicted", NS, client.V1Eviction(
                metadata=meta("bound")))
        self.assertApiError(ctx.exception, 400, "BadRequest",
                            "name in URL does not match name in Eviction object")
        answer = self.core.create_namespaced_pod_eviction("evicted", NS, client.V1Eviction(
            metadata=meta("evicted")), _preload_content=False)
        self.assertEqual(answer.status, 201)
        self.assertEqual(json.loads(answer.data)["status"], "Success")
        with self.assertRaises(ApiException) as ctx:
            self.core.read_namespaced_pod("evicted", NS)
        self.assertEqual(ctx.exception.status, 404)

        quota = self.core.create_namespaced_resource_quota(NS, client.V1ResourceQuota(
            metadata=meta("q"), spec=client.V1ResourceQuotaSpec(hard={"pods": "50"})))
        deleted = self.core.delete_namespaced_resource_quota("q", NS)
        self.assertIsInstance(deleted, client.V1ResourceQuota)
        self.assertEqual(deleted.metadata.uid, quota.metadata.uid)
        volume = self.core.create_persistent_volume(client.V1PersistentVolume(
            metadata=meta("pv-" + NS), spec=client.V1PersistentVolumeSpec(
                capacity={"storage": "1Gi"}, access_modes=["ReadWriteOnce"],
                host_path=client.V1HostPathVolumeSource(path="/tmp/pv"))))
        deleted = self.core.delete_persistent_volume("pv-" + NS)
        self.assertIsInstance(deleted, client.V1PersistentVolume)
        self.assertEqual(deleted.metadata.uid, volume.metadata.uid)

    def test_13_resource_quota_status(self):
        """the quota controller's status: hard follows spec, deletes are given back"""
        self.core.create_namespaced_resource_quota(NS, client.V1ResourceQuota(
            metadata=meta("counted"),
            spec=client.V1ResourceQuotaSpec(hard={"count/secrets": "100", "services": "30"})))

        def used_becomes(name, value=None):
            for _ in range(200):
                status = self.core.read_namespaced_resource_quota("counted", NS).status
                used = (status.used or {}) if status is not None else {}
                if name in used and (value is None or used[name] == value):
                    return status
                time.sleep(0.1)
            self.fail(f"status.used[{name!r}] never became {value!r}")

        status = used_becomes("count/secrets")
        self.assertEqual(status.hard, {"count/secrets": "100", "services": "30"})
        self.assertEqual(set(status.used), {"count/secrets", "services"})
        before = int(status.used["count/secrets"])
        self.core.create_namespaced_secret(NS, client.V1Secret(
            metadata=meta("counted"), string_data={"k": "v"}))
        used_becomes("count/secrets", str(before + 1))
        self.core.delete_namespaced_secret("counted", NS)
        used_becomes("count/secrets", str(before))
        self.core.delete_namespaced_resource_quota("counted", NS)


GROUP = NS + ".py.example.com"
CRD_NAME = "widgets." + GROUP


def widget(name, **spec):
    return {"apiVersion": GROUP + "/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


class CustomResourceCases(unittest.TestCase):
    """A CRD through ApiextensionsV1Api's typed models, its objects through CustomObjectsApi."""

    ext: client.ApiextensionsV1Api
    custom: client.CustomObjectsApi
    core: client.CoreV1Api

    @classmethod
    def setUpClass(cls):
        config.load_kube_config(config_file=os.environ["KUBECONFIG"])
        cls.ext = client.ApiextensionsV1Api()
        cls.custom = client.CustomObjectsApi()
        cls.core = client.CoreV1Api()
        cls.core.create_namespace(client.V1Namespace(metadata=meta(NS + "-cr")))
        cls.ns = NS + "-cr"
        props = client.V1JSONSchemaProps
        schema = props(
            type="object",
            properties={
                "spec": props(
                    type="object",
                    required=["size"],
                    x_kubernetes_validations=[
                        client.V1ValidationRule(rule="self.size != 13", message="unlucky size")
                    ],
                    properties={
                        "size": props(type="integer", minimum=1, maximum=100),
                        "colour": props(type="string", default="blue"),
                    },
                ),
                "status": props(type="object", properties={"ready": props(type="boolean"), "replicas": props(type="integer")}),
            },
        )
        crd = client.V1CustomResourceDefinition(
            metadata=meta(CRD_NAME),
            spec=client.V1CustomResourceDefinitionSpec(
                group=GROUP,
                scope="Namespaced",
                names=client.V1CustomResourceDefinitionNames(plural="widgets", singular="widget", kind="Widget", short_names=["wd"]),
                versions=[
                    client.V1CustomResourceDefinitionVersion(
                        name="v1",
                        served=True,
                        storage=True,
                        schema=client.V1CustomResourceValidation(open_apiv3_schema=schema),
                        subresources=client.V1CustomResourceSubresources(
                            status={},
                            scale=client.V1CustomResourceSubresourceScale(
                                spec_replicas_path=".spec.size", status_replicas_path=".status.replicas"
                            ),
                        ),
                    )
                ],
            ),
        )
        cls.created = cls.ext.create_custom_resource_definition(crd)

        def established():
            got = cls.ext.read_custom_resource_definition(CRD_NAME)
            conds = {c.type: c.status for c in (got.status.conditions or [])}
            return conds.get("Established") == "True" and got

        cls.established = eventually("the CRD to be Established", established)

        def served():
            try:
                cls.custom.list_namespaced_custom_object(GROUP, "v1", cls.ns, "widgets")
                return True
            except ApiException:
                return False

        eventually("the custom resource to be served", served)

    @classmethod
    def tearDownClass(cls):
        for call in (lambda: cls.ext.delete_custom_resource_definition(CRD_NAME), lambda: cls.core.delete_namespace(cls.ns)):
            try:
                call()
            except ApiException:
                pass

    def test_01_crd_typed(self):
        """crd: typed create answers the model with storedVersions; Established and NamesAccepted with acceptedNames"""
        self.assertIsInstance(self.created, client.V1CustomResourceDefinition)
        self.assertEqual(self.created.status.stored_versions, ["v1"])
        got = self.established
        conds = {c.type: c for c in got.status.conditions}
        self.assertEqual(conds["NamesAccepted"].status, "True")
        self.assertEqual(conds["NamesAccepted"].reason, "NoConflicts")
        self.assertEqual(conds["Established"].reason, "InitialNamesAccepted")
        self.assertEqual(got.status.accepted_names.kind, "Widget")
        self.assertEqual(got.status.accepted_names.short_names, ["wd"])
        listed = self.ext.list_custom_resource_definition(field_selector="metadata.name=" + CRD_NAME)
        self.assertEqual([c.metadata.name for c in listed.items], [CRD_NAME])

    def test_02_crd_invalid(self):
        """crd: an invalid definition is 422 with upstream's cause"""
        bad = client.V1CustomResourceDefinition(
            metadata=meta("things." + GROUP),
            spec=client.V1CustomResourceDefinitionSpec(
                group=GROUP,
                scope="Namespaced",
                names=client.V1CustomResourceDefinitionNames(plural="things", kind="Thing"),
                versions=[client.V1CustomResourceDefinitionVersion(name="v1", served=True, storage=False,
                    schema=client.V1CustomResourceValidation(open_apiv3_schema=client.V1JSONSchemaProps(type="object")))],
            ),
        )
        with self.assertRaises(ApiException) as ctx:
            self.ext.create_custom_resource_definition(bad)
        body = status_of(ctx.exception)
        self.assertEqual((ctx.exception.status, body["reason"]), (422, "Invalid"))
        self.assertIn("must have exactly one version marked as storage version", body["message"])
        self.assertEqual(body["details"]["group"], "apiextensions.k8s.io")

    def test_03_custom_object_crud(self):
        """custom objects: create (defaults), get, list, replace, merge patch, delete"""
        c = self.custom
        made = c.create_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", widget("w1", size=3))
        self.assertEqual(made["spec"], {"size": 3, "colour": "blue"})
        self.assertEqual(made["metadata"]["generation"], 1)
        self.assertEqual(made["apiVersion"], GROUP + "/v1")
        got = c.get_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w1")
        self.assertEqual(got["metadata"]["uid"], made["metadata"]["uid"])
        listed = c.list_namespaced_custom_object(GROUP, "v1", self.ns, "widgets")
        self.assertEqual(listed["kind"], "WidgetList")
        self.assertEqual([i["metadata"]["name"] for i in listed["items"]], ["w1"])
        got["spec"]["size"] = 4
        replaced = c.replace_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w1", got)
        self.assertEqual((replaced["spec"]["size"], replaced["metadata"]["generation"]), (4, 2))
        patched = c.patch_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w1", {"spec": {"colour": "red"}})
        self.assertEqual(patched["spec"], {"size": 4, "colour": "red"})
        everywhere = c.list_cluster_custom_object(GROUP, "v1", "widgets")
        self.assertEqual(len(everywhere["items"]), 1)
        gone = c.delete_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w1")
        self.assertEqual((gone["kind"], gone["status"]), ("Status", "Success"))
        with self.assertRaises(ApiException) as ctx:
            c.get_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w1")
        self.assertEqual(status_of(ctx.exception)["message"], 'widgets.%s "w1" not found' % GROUP)

    def test_04_custom_object_invalid(self):
        """custom objects: schema and CEL violations are 422 with causes and field paths"""
        c = self.custom
        with self.assertRaises(ApiException) as ctx:
            c.create_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", widget("bad", size=500))
        body = status_of(ctx.exception)
        self.assertEqual((ctx.exception.status, body["reason"]), (422, "Invalid"))
        self.assertEqual(body["details"]["kind"], "Widget")
        self.assertEqual(body["details"]["group"], GROUP)
        self.assertEqual(body["details"]["causes"][0]["field"], "spec.size")
        self.assertEqual(body["details"]["causes"][0]["reason"], "FieldValueInvalid")
        with self.assertRaises(ApiException) as ctx:
            c.create_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", widget("bad", size=13))
        self.assertIn('spec: Invalid value: "object": unlucky size', status_of(ctx.exception)["message"])
        with self.assertRaises(ApiException) as ctx:
            c.create_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", widget("bad", colour="x"))
        cause = status_of(ctx.exception)["details"]["causes"][0]
        self.assertEqual((cause["field"], cause["reason"]), ("spec.size", "FieldValueRequired"))

    def test_04b_crd_rule_type_error(self):
        """crd: a rule that does not type-check against the schema is a 422 with the rule's cause"""
        props = client.V1JSONSchemaProps
        bad = client.V1CustomResourceDefinition(
            metadata=meta("checks." + GROUP),
            spec=client.V1CustomResourceDefinitionSpec(
                group=GROUP,
                scope="Namespaced",
                names=client.V1CustomResourceDefinitionNames(plural="checks", kind="Check"),
                versions=[client.V1CustomResourceDefinitionVersion(
                    name="v1", served=True, storage=True,
                    schema=client.V1CustomResourceValidation(open_apiv3_schema=props(
                        type="object",
                        properties={"spec": props(
                            type="object",
                            properties={"size": props(type="integer")},
                            x_kubernetes_validations=[client.V1ValidationRule(rule='self.size == "a"')],
                        )},
                    )),
                )],
            ),
        )
        with self.assertRaises(ApiException) as ctx:
            self.ext.create_custom_resource_definition(bad)
        body = status_of(ctx.exception)
        self.assertEqual((ctx.exception.status, body["reason"]), (422, "Invalid"))
        cause = body["details"]["causes"][0]
        self.assertEqual(
            (cause["reason"], cause["field"]),
            ("FieldValueInvalid", "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"),
        )
        self.assertIn("compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(int, string)'", cause["message"])

    def test_05_status_and_scale(self):
        """custom objects: /status writes only status; /scale reads and writes the replicas paths"""
        c = self.custom
        c.create_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", widget("w2", size=2))
        st = c.patch_namespaced_custom_object_status(GROUP, "v1", self.ns, "widgets", "w2",
                                                     {"status": {"ready": True, "replicas": 2}, "spec": {"size": 9}})
        self.assertEqual((st["status"], st["spec"]["size"], st["metadata"]["generation"]), ({"ready": True, "replicas": 2}, 2, 1))
        scale = c.get_namespaced_custom_object_scale(GROUP, "v1", self.ns, "widgets", "w2")
        self.assertEqual((scale["kind"], scale["apiVersion"]), ("Scale", "autoscaling/v1"))
        self.assertEqual((scale["spec"]["replicas"], scale["status"]["replicas"]), (2, 2))
        c.patch_namespaced_custom_object_scale(GROUP, "v1", self.ns, "widgets", "w2", {"spec": {"replicas": 7}})
        self.assertEqual(c.get_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w2")["spec"]["size"], 7)

    def test_06_watch(self):
        """custom objects: a watch from a list's resourceVersion sees ADDED, MODIFIED, DELETED"""
        c = self.custom
        rv = c.list_namespaced_custom_object(GROUP, "v1", self.ns, "widgets")["metadata"]["resourceVersion"]
        c.create_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", widget("w3", size=1))
        c.patch_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w3", {"spec": {"size": 2}})
        c.delete_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "w3")
        seen = []
        w = watch.Watch()
        for ev in w.stream(c.list_namespaced_custom_object, GROUP, "v1", self.ns, "widgets",
                           resource_version=rv, timeout_seconds=5):
            if ev["object"]["metadata"]["name"] == "w3":
                seen.append(ev["type"])
            if len(seen) == 3:
                w.stop()
        self.assertEqual(seen, ["ADDED", "MODIFIED", "DELETED"])


class Result(unittest.TextTestResult):
    """Prints the suite's PASS/FAIL lines."""

    def addSuccess(self, test):
        super().addSuccess(test)
        print("PASS: [%s] python: %s" % (LABEL, test.shortDescription()), flush=True)

    def _fail(self, test, err):
        print("FAIL: [%s] python: %s" % (LABEL, test.shortDescription()), flush=True)
        for line in self._exc_info_to_string(err, test).rstrip().splitlines()[-15:]:
            print("      | " + line, flush=True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, err)


def main():
    global LABEL
    if len(sys.argv) > 1:
        LABEL = sys.argv[1]
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite([loader.loadTestsFromTestCase(ClientCases), loader.loadTestsFromTestCase(CustomResourceCases)])
    runner = unittest.TextTestRunner(resultclass=Result, verbosity=0, stream=open(os.devnull, "w"))
    result = runner.run(suite)
    # Failures in class set-up (e.g. no server) are errors of no single case.
    for test, trace in result.errors:
        if not isinstance(test, unittest.TestCase):
            print("FAIL: [%s] python: %s" % (LABEL, test))
            print("      | " + trace.rstrip().splitlines()[-1])
    failed = len(result.failures) + len(result.errors)
    print("python [%s]: %d passed, %d failed" % (LABEL, result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
