// The official JavaScript client (@kubernetes/client-node) against a running kapi: typed CRUD,
// list with selectors and paging, an informer's list+watch, every patch type, status
// subresources, and errors read as ApiException with the Status body.
//
//   KUBECONFIG=path/to/admin.kubeconfig node e2e/js/client.test.mjs [label]
//
// Prints PASS/FAIL per case and "N passed, M failed"; exits non-zero on any failure. The
// package comes from the folder e2e/clients.sh prepares (NODE_PATH does not apply to ES
// modules, so the script imports it from KAPI_JS_MODULES).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

const modules = process.env.KAPI_JS_MODULES;
if (!modules) {
  console.error('client.test.mjs: KAPI_JS_MODULES must name the folder holding node_modules');
  process.exit(2);
}
const require = createRequire(path.join(modules, 'package.json'));
const k8s = await import(require.resolve('@kubernetes/client-node'));

const label = process.argv[2] ?? 'js';
const kc = new k8s.KubeConfig();
kc.loadFromFile(process.env.KUBECONFIG);
const core = kc.makeApiClient(k8s.CoreV1Api);
const apps = kc.makeApiClient(k8s.AppsV1Api);

let passed = 0;
let failed = 0;
async function test(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`PASS: [${label}] ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL: [${label}] ${name}`);
    console.log(String(e?.stack ?? e).split('\n').slice(0, 12).map((l) => `      | ${l}`).join('\n'));
  }
}

// The Status a failed call carried (ApiException.body is the response text).
async function statusOf(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof k8s.ApiException, `want ApiException, got ${e}`);
    const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
    return { code: e.code, body };
  }
  assert.fail('the call succeeded; want an error');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function eventually(what, check, seconds = 10) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const ns = `js-${Date.now().toString(36)}`;
const patchWith = (strategy) => k8s.setHeaderOptions('Content-Type', strategy);

await test('create and read a namespace', async () => {
  const created = await core.createNamespace({ body: { metadata: { name: ns, labels: { suite: 'js' } } } });
  assert.equal(created.metadata.name, ns);
  assert.equal(created.status.phase, 'Active');
  const read = await core.readNamespace({ name: ns });
  assert.equal(read.metadata.labels.suite, 'js');
  assert.equal(read.metadata.uid, created.metadata.uid);
});

await test('configmap CRUD', async () => {
  const cm = await core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'one', labels: { app: 'web', tier: 'a' } }, data: { k: 'v' } },
  });
  assert.equal(cm.kind, 'ConfigMap');
  assert.equal(cm.data.k, 'v');
  assert.match(cm.metadata.resourceVersion, /^\d+$/);
  cm.data.k = 'v2';
  const replaced = await core.replaceNamespacedConfigMap({ name: 'one', namespace: ns, body: cm });
  assert.equal(replaced.data.k, 'v2');
  assert.notEqual(replaced.metadata.resourceVersion, cm.metadata.resourceVersion);
  const read = await core.readNamespacedConfigMap({ name: 'one', namespace: ns });
  assert.equal(read.data.k, 'v2');
});

await test('secret create with data and stringData', async () => {
  const s = await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 's' }, type: 'Opaque', stringData: { user: 'admin' }, data: { pw: Buffer.from('pw').toString('base64') } },
  });
  assert.equal(Buffer.from(s.data.user, 'base64').toString(), 'admin');
  assert.equal(Buffer.from(s.data.pw, 'base64').toString(), 'pw');
  assert.equal(s.stringData, undefined);
});

await test('list with a label selector, a field selector and paging', async () => {
  for (const [name, app] of [['two', 'web'], ['three', 'db'], ['four', 'web']]) {
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name, labels: { app } } } });
  }
  const web = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app=web' });
  assert.deepEqual(web.items.map((c) => c.metadata.name).sort(), ['four', 'one', 'two']);
  const byName = await core.listNamespacedConfigMap({ namespace: ns, fieldSelector: 'metadata.name=three' });
  assert.deepEqual(byName.items.map((c) => c.metadata.name), ['three']);
  const first = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app', limit: 2 });
  assert.equal(first.items.length, 2);
  assert.ok(first.metadata._continue, 'a first page has a continue token');
  // As upstream, a count of the rest only when no selector filters the list.
  assert.equal(first.metadata.remainingItemCount, undefined);
  const second = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app', limit: 2, _continue: first.metadata._continue });
  assert.equal(second.items.length, 2);
  assert.equal(second.metadata._continue, undefined);
  const names = [...first.items, ...second.items].map((c) => c.metadata.name).sort();
  assert.deepEqual(names, ['four', 'one', 'three', 'two']);
  // kube-root-ca.crt is there too: count against the whole list.
  const all = await core.listNamespacedConfigMap({ namespace: ns });
  const unfiltered = await core.listNamespacedConfigMap({ namespace: ns, limit: 1 });
  assert.equal(unfiltered.items.length, 1);
  assert.equal(unfiltered.metadata.remainingItemCount, all.items.length - 1);
});

await test('merge, strategic, JSON and apply patches', async () => {
  let cm = await core.patchNamespacedConfigMap(
    { name: 'one', namespace: ns, body: { data: { merged: 'yes' } } },
    patchWith(k8s.PatchStrategy.MergePatch),
  );
  assert.equal(cm.data.merged, 'yes');
  cm = await core.patchNamespacedConfigMap(
    { name: 'one', namespace: ns, body: { metadata: { labels: { strategic: 'yes' } } } },
    patchWith(k8s.PatchStrategy.StrategicMergePatch),
  );
  assert.equal(cm.metadata.labels.strategic, 'yes');
  assert.equal(cm.metadata.labels.app, 'web');
  cm = await core.patchNamespacedConfigMap(
    { name: 'one', namespace: ns, body: [{ op: 'replace', path: '/data/k', value: 'json' }] },
    patchWith(k8s.PatchStrategy.JsonPatch),
  );
  assert.equal(cm.data.k, 'json');
  cm = await core.patchNamespacedConfigMap(
    {
      name: 'applied',
      namespace: ns,
      fieldManager: 'js-suite',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied', namespace: ns }, data: { a: '1' } },
    },
    patchWith(k8s.PatchStrategy.ServerSideApply),
  );
  assert.equal(cm.data.a, '1');
  assert.ok(cm.metadata.managedFields.some((m) => m.manager === 'js-suite' && m.operation === 'Apply'));
});

await test('errors are ApiException with the Status: 404, 409, 422', async () => {
  let { code, body } = await statusOf(core.readNamespacedConfigMap({ name: 'missing', namespace: ns }));
  assert.equal(code, 404);
  assert.equal(body.kind, 'Status');
  assert.equal(body.reason, 'NotFound');
  assert.equal(body.message, 'configmaps "missing" not found');
  ({ code, body } = await statusOf(core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'one' } } })));
  assert.equal(code, 409);
  assert.equal(body.reason, 'AlreadyExists');
  assert.equal(body.message, 'configmaps "one" already exists');
  ({ code, body } = await statusOf(core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'Bad_Name' } } })));
  assert.equal(code, 422);
  assert.equal(body.reason, 'Invalid');
  assert.equal(body.details.causes[0].field, 'metadata.name');
  assert.match(body.message, /^ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": /);
});

await test('an informer lists, then sees add, update and delete', async () => {
  const seen = [];
  const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${ns}/configmaps`, () =>
    core.listNamespacedConfigMap({ namespace: ns }),
  );
  for (const ev of ['add', 'update', 'delete']) {
    informer.on(ev, (obj) => seen.push(`${ev}:${obj.metadata.name}`));
  }
  informer.on('error', (e) => seen.push(`error:${e}`));
  await informer.start();
  try {
    await eventually('the initial list', () => seen.includes('add:one'));
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'watched' } } });
    await eventually('the add', () => seen.includes('add:watched'));
    await core.patchNamespacedConfigMap(
      { name: 'watched', namespace: ns, body: { data: { x: 'y' } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    await eventually('the update', () => seen.includes('update:watched'));
    await core.deleteNamespacedConfigMap({ name: 'watched', namespace: ns });
    await eventually('the delete', () => seen.includes('delete:watched'));
    assert.equal(informer.list(ns).some((c) => c.metadata.name === 'watched'), false);
    assert.equal(seen.filter((s) => s.startsWith('error:')).length, 0, seen.join(' '));
  } finally {
    await informer.stop();
  }
});

await test('watch from a resourceVersion delivers later events in order', async () => {
  const list = await core.listNamespacedConfigMap({ namespace: ns });
  const events = [];
  const watch = new k8s.Watch(kc);
  const req = await watch.watch(
    `/api/v1/namespaces/${ns}/configmaps`,
    { resourceVersion: list.metadata.resourceVersion },
    (type, obj) => events.push(`${type}:${obj.metadata.name}`),
    () => {},
  );
  try {
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'w1' } } });
    await core.deleteNamespacedConfigMap({ name: 'w1', namespace: ns });
    await eventually('two events', () => events.length >= 2);
    assert.deepEqual(events, ['ADDED:w1', 'DELETED:w1']);
  } finally {
    req.abort();
  }
});

await test('service create, read, delete returns the service', async () => {
  const svc = await core.createNamespacedService({
    namespace: ns,
    body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
  });
  assert.match(svc.spec.clusterIP, /^\d+\.\d+\.\d+\.\d+$/);
  assert.equal(svc.spec.ports[0].targetPort, 80);
  assert.equal(svc.spec.type, 'ClusterIP');
  const deleted = await core.deleteNamespacedService({ name: 'web', namespace: ns });
  assert.equal(deleted.metadata.name, 'web');
  const { code } = await statusOf(core.readNamespacedService({ name: 'web', namespace: ns }));
  assert.equal(code, 404);
});

await test('deployment CRUD, scale and status subresources', async () => {
  const dep = await apps.createNamespacedDeployment({
    namespace: ns,
    body: {
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      },
    },
  });
  assert.equal(dep.spec.strategy.type, 'RollingUpdate');
  assert.equal(dep.spec.template.spec.restartPolicy, 'Always');
  const scale = await apps.readNamespacedDeploymentScale({ name: 'web', namespace: ns });
  assert.equal(scale.spec.replicas, 1);
  scale.spec.replicas = 3;
  const scaled = await apps.replaceNamespacedDeploymentScale({ name: 'web', namespace: ns, body: scale });
  assert.equal(scaled.spec.replicas, 3);
  const status = await apps.patchNamespacedDeploymentStatus(
    { name: 'web', namespace: ns, body: { status: { observedGeneration: 2, replicas: 3 } } },
    patchWith(k8s.PatchStrategy.MergePatch),
  );
  assert.equal(status.status.replicas, 3);
  assert.equal(status.spec.replicas, 3);
  const read = await apps.readNamespacedDeploymentStatus({ name: 'web', namespace: ns });
  assert.equal(read.status.observedGeneration, 2);
  await apps.deleteNamespacedDeployment({ name: 'web', namespace: ns });
  const { code } = await statusOf(apps.readNamespacedDeployment({ name: 'web', namespace: ns }));
  assert.equal(code, 404);
});

await test('namespace delete is accepted', async () => {
  const ns2 = `${ns}-gone`;
  await core.createNamespace({ body: { metadata: { name: ns2 } } });
  // Upstream answers with the Namespace, now Terminating (the client reads it as a V1Status).
  const deleted = await core.deleteNamespace({ name: ns2 });
  assert.equal(deleted.kind, 'Namespace');
  const read = await core.readNamespace({ name: ns2 }).catch((e) => e);
  // Without a namespace controller it stays Terminating; with one it is gone (404).
  if (read instanceof k8s.ApiException) assert.equal(read.code, 404);
  else assert.equal(read.status.phase, 'Terminating');
});

await test('custom resources: typed CRD, Established, CustomObjectsApi CRUD, status, 422', async () => {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const group = `${ns}.js.example.com`;
  const name = `gadgets.${group}`;
  const crd = await ext.createCustomResourceDefinition({
    body: {
      metadata: { name },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
        versions: [{
          name: 'v1', served: true, storage: true, subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', properties: {
            spec: { type: 'object', properties: { size: { type: 'integer', maximum: 10 }, shape: { type: 'string', _default: 'round' } } },
            status: { type: 'object', properties: { ok: { type: 'boolean' } } },
          } } },
        }],
      },
    },
  });
  assert.deepEqual(crd.status.storedVersions, ['v1']);
  await eventually('the CRD to be Established', async () => {
    const got = await ext.readCustomResourceDefinition({ name });
    return (got.status.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
  });
  const args = { group, version: 'v1', namespace: ns, plural: 'gadgets' };
  await eventually('the custom resource to be served', async () =>
    custom.listNamespacedCustomObject(args).then(() => true, () => false));
  const made = await custom.createNamespacedCustomObject({
    ...args, body: { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 2 } },
  });
  assert.deepEqual(made.spec, { size: 2, shape: 'round' });
  const patched = await custom.patchNamespacedCustomObject(
    { ...args, name: 'g1', body: { spec: { size: 3 } } }, patchWith(k8s.PatchStrategy.MergePatch));
  assert.equal(patched.spec.size, 3);
  assert.equal(patched.metadata.generation, 2);
  const st = await custom.patchNamespacedCustomObjectStatus(
    { ...args, name: 'g1', body: { status: { ok: true } } }, patchWith(k8s.PatchStrategy.MergePatch));
  assert.deepEqual(st.status, { ok: true });
  const list = await custom.listNamespacedCustomObject(args);
  assert.deepEqual(list.items.map((i) => i.metadata.name), ['g1']);
  const { code, body } = await statusOf(custom.createNamespacedCustomObject({
    ...args, body: { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g2' }, spec: { size: 11 } },
  }));
  assert.equal(code, 422);
  assert.equal(body.details.causes[0].field, 'spec.size');
  assert.equal(body.message, 'Gadget.' + group + ' "g2" is invalid: spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10');
  await custom.deleteNamespacedCustomObject({ ...args, name: 'g1' });
  await ext.deleteCustomResourceDefinition({ name });
});

console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
