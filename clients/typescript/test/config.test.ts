import { test } from "node:test";
import * as assert from "node:assert/strict";

import { InvalidArgument, resolveConfig } from "../src/index";

test("defaults when neither options nor DUEQ_* say anything", () => {
  const c = resolveConfig({}, {});
  assert.equal(c.target, "127.0.0.1:50051");
  assert.equal(c.tls, false);
  assert.equal(c.namespace, "default");
  assert.equal(c.token, undefined);
  assert.equal(c.timeoutMs, 10_000);
  assert.equal(c.maxPayloadSize, 1024 * 1024);
});

test("every DUEQ_* variable is read", () => {
  const c = resolveConfig(
    {},
    {
      DUEQ_ADDR: "https://dueq.internal:7443",
      DUEQ_TOKEN: "t0k",
      DUEQ_NAMESPACE: "shop",
      DUEQ_TLS_CA: "/ca.pem",
      DUEQ_TLS_CLIENT_CERT: "/c.pem",
      DUEQ_TLS_CLIENT_KEY: "/k.pem",
      DUEQ_TLS_SERVER_NAME: "dueq.example",
    },
  );
  assert.deepEqual(
    [c.target, c.tls, c.token, c.namespace, c.tlsCa, c.tlsCert, c.tlsKey, c.tlsServerName],
    ["dueq.internal:7443", true, "t0k", "shop", "/ca.pem", "/c.pem", "/k.pem", "dueq.example"],
  );
});

test("an option wins over its variable; an empty variable counts as unset", () => {
  const env = { DUEQ_ADDR: "http://a:1", DUEQ_NAMESPACE: "", DUEQ_TOKEN: "from-env" };
  const c = resolveConfig({ addr: "http://b:2", token: "from-arg" }, env);
  assert.equal(c.target, "b:2");
  assert.equal(c.token, "from-arg");
  assert.equal(c.namespace, "default");
});

test("a CA alone implies TLS; https without a port is 443", () => {
  assert.equal(resolveConfig({ addr: "localhost:9", tlsCa: "/ca.pem" }, {}).tls, true);
  assert.equal(resolveConfig({ addr: "https://dueq.example" }, {}).target, "dueq.example:443");
});

function refused(f: () => unknown, field: string): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof InvalidArgument, String(e));
    assert.equal(e.code, 3);
    assert.ok(e.details.startsWith(`${field}:`), e.details);
    return true;
  });
}

test("bad settings are InvalidArgument naming the option", () => {
  refused(() => resolveConfig({ addr: "http://a:1", tlsCa: "/ca.pem" }, {}), "addr");
  refused(() => resolveConfig({ addr: "ftp://x/y/z" }, {}), "addr");
  refused(() => resolveConfig({ tlsCert: "/c.pem" }, {}), "tlsKey");
  refused(() => resolveConfig({ tlsKey: "/k.pem" }, {}), "tlsCert");
  refused(() => resolveConfig({ timeoutMs: 0 }, {}), "timeoutMs");
  refused(() => resolveConfig({ maxPayloadSize: -1 }, {}), "maxPayloadSize");
});
