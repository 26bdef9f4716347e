// The dueq web console in a real browser: Debian's Chromium driven by playwright-core
// (no browser download). Started by tests/it/console/browser.rs, which runs Redis and
// dueq with the console and an auth file, populates namespace DUEQ_NAMESPACE, and
// passes:
//   DUEQ_CONSOLE_URL   the console, e.g. http://127.0.0.1:PORT
//   DUEQ_GRPC_ADDR     the gRPC address, e.g. http://127.0.0.1:PORT
//   DUEQ_ADMIN_TOKEN   an admin's bearer token; DUEQ_READER_TOKEN a reader's
//   DUEQ_NAMESPACE     the populated namespace (queue "emails" with dead jobs,
//                      schedule "nightly")
//   DUEQ_SCREENSHOTS   where to save the screenshots (docs/console)
//   DUEQ_CHROMIUM      the browser (default /usr/bin/chromium)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { Client } from "@dueq/client";

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set (run through cargo test --test it console::browser -- --ignored)`);
  return value;
};
const URL_ = env("DUEQ_CONSOLE_URL");
const NS = env("DUEQ_NAMESPACE", "shop");
const ADMIN = env("DUEQ_ADMIN_TOKEN");
const READER = env("DUEQ_READER_TOKEN");
const SHOTS = env("DUEQ_SCREENSHOTS", "");
const VIEWPORT = { width: 1280, height: 800 };
// Bounds that only keep a broken build from hanging (nothing here is timed).
const PATIENCE = 30_000;

let browser;
let client;

before(async () => {
  browser = await chromium.launch({
    executablePath: env("DUEQ_CHROMIUM", "/usr/bin/chromium"),
    // Root in a CI container: no sandbox; a small /dev/shm there: not used.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  client = new Client({ addr: env("DUEQ_GRPC_ADDR"), token: ADMIN, namespace: NS });
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  client?.close();
});

async function shot(page, name) {
  if (!SHOTS) return;
  // Wait for the stylesheet and fonts so every screenshot is the finished page.
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

/** A new browser context signed in with `token`; its page. */
async function signedIn(token) {
  const context = await browser.newContext({ viewport: VIEWPORT });
  context.setDefaultTimeout(PATIENCE);
  const page = await context.newPage();
  await page.goto(`${URL_}/`);
  assert.match(new URL(page.url()).pathname, /^\/login$/, "a page without a session goes to sign-in");
  await page.fill("#token", token);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  return page;
}

const pendingCard = (page) => page.locator("#total-pending");

let admin;

test("sign in as an admin and see the overview", async () => {
  admin = await signedIn(ADMIN);
  assert.equal(new URL(admin.url()).pathname, "/");
  await admin.locator(`#namespaces a[href="/ns/${NS}"]`).waitFor();
  await shot(admin, "overview");
});

test("a queue backs up live as jobs are enqueued", async () => {
  await admin.goto(`${URL_}/ns/${NS}`);
  const before = Number(await pendingCard(admin).textContent());
  const batch = [];
  for (let n = 0; n < 7; n++) batch.push(client.enqueueJson("emails", "welcome", { user: n }));
  await Promise.all(batch);
  // The page's live stream replaces the content at the namespace's next sample.
  await admin.waitForFunction(
    (want) => Number(document.querySelector("#total-pending")?.textContent) === want,
    before + 7,
    { timeout: PATIENCE },
  );
  await shot(admin, "queues");
});

test("filter a queue's dead jobs by state and open one", async () => {
  await admin.goto(`${URL_}/ns/${NS}/jobs?queue=emails`);
  await Promise.all([admin.waitForNavigation(), admin.click("p.states a:text-is('dead')")]);
  assert.match(admin.url(), /state=dead/);
  const rows = admin.locator("table.jobs tbody tr");
  assert.ok((await rows.count()) > 0, "dead jobs are listed");
  for (const badge of await admin.locator("table.jobs tbody .badge").allTextContents()) {
    assert.equal(badge.trim(), "dead");
  }
  await shot(admin, "dead-jobs");
  await Promise.all([admin.waitForNavigation(), rows.first().locator("a").first().click()]);
  assert.match(new URL(admin.url()).pathname, new RegExp(`^/ns/${NS}/jobs/`));
  await admin.locator("ol.timeline li.bad").first().waitFor();
  await admin.locator("pre.payload").waitFor();
  await shot(admin, "job");
});

test("dead letters grouped by error", async () => {
  await admin.goto(`${URL_}/ns/${NS}/dead`);
  const groups = admin.locator("table.groups tbody tr");
  assert.equal(await groups.count(), 3, "three errors, three groups");
  assert.ok((await admin.locator("table.groups button:text-is('Retry group')").count()) > 0);
  await shot(admin, "dead-letters");
});

test("retry all dead jobs of a queue, the confirmation accepted", async () => {
  await admin.goto(`${URL_}/ns/${NS}`);
  await Promise.all([admin.waitForNavigation(), admin.click("table.queues tr[data-queue=emails] td a:text-is('emails')")]);
  assert.equal(new URL(admin.url()).pathname, `/ns/${NS}/queues/emails`);
  await shot(admin, "queue");
  let asked = "";
  admin.once("dialog", (dialog) => {
    asked = dialog.message();
    dialog.accept();
  });
  await Promise.all([admin.waitForNavigation(), admin.click("button:text-is('Retry all dead')")]);
  assert.match(asked, /Retry every dead job/);
  const notice = await admin.locator("p.notice").textContent();
  assert.match(notice, /Retried [1-9]\d* dead jobs of emails\./);
  await admin.goto(`${URL_}/ns/${NS}/jobs?queue=emails&state=dead`);
  assert.equal(await admin.locator("table.jobs tbody tr").count(), 0, "no dead job left");
});

test("trigger a schedule", async () => {
  await admin.goto(`${URL_}/ns/${NS}/schedules/nightly`);
  await admin.locator("table.fires").waitFor();
  await shot(admin, "schedule");
  admin.once("dialog", (dialog) => dialog.accept());
  await Promise.all([admin.waitForNavigation(), admin.click("button:text-is('Trigger now')")]);
  assert.match(await admin.locator("p.notice").textContent(), /Triggered: occurrence \S+/);
});

test("a flow drawn as a graph, and the audit log", async () => {
  await admin.goto(`${URL_}/ns/${NS}/flows/upload-42`);
  assert.equal(await admin.locator("svg.flow g.node").count(), 4, "every node drawn");
  assert.equal(await admin.locator("svg.flow line.edge").count(), 4, "an edge per dependency");
  await shot(admin, "flow");
  // The audit record is appended after the answer: reload until it is there.
  const deadline = Date.now() + PATIENCE;
  for (;;) {
    await admin.goto(`${URL_}/ns/${NS}/audit`);
    if ((await admin.locator("table.audit tr", { hasText: "RetryDeadJobs" }).count()) > 0) break;
    assert.ok(Date.now() < deadline, "RetryDeadJobs reaches the audit page");
    await admin.waitForTimeout(200);
  }
  const row = admin.locator("table.audit tr", { hasText: "RetryDeadJobs" }).first();
  assert.match(await row.textContent(), /admin.*queue:emails.*OK.*console/s);
  await shot(admin, "audit");
});

test("a reader sees no retry button and its forged POST is refused", async () => {
  const reader = await signedIn(READER);
  await reader.goto(`${URL_}/ns/${NS}`);
  await reader.locator("table.queues").waitFor();
  assert.equal(await reader.locator("button:text-is('Retry all dead')").count(), 0);
  assert.equal(await reader.locator("button:text-is('Pause')").count(), 0);
  await reader.goto(`${URL_}/ns/${NS}/queues/emails`);
  assert.equal(await reader.locator("h1").textContent(), "Queue emails");
  assert.equal(await reader.locator("button").filter({ hasText: /Retry all dead|Pause|Purge/ }).count(), 0);
  // A fetch from the console's own page: same origin, the reader's cookie.
  const status = await reader.evaluate(async (ns) => {
    const answer = await fetch(`/ns/${ns}/queues/emails/pause`, { method: "POST" });
    return answer.status;
  }, NS);
  assert.equal(status, 403);
  await reader.goto(`${URL_}/ns/${NS}`);
  assert.equal(await reader.locator("table.queues tr[data-queue=emails] .badge.paused").count(), 0, "still running");
  await reader.context().close();
});

test("a request without the CSRF proof is refused", async () => {
  const cookies = await admin.context().cookies();
  const session = cookies.find((c) => c.name === "dueq_session");
  assert.ok(session, "the admin's session cookie");
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  // Node's fetch sends neither Origin nor Sec-Fetch-Site: what a forger's script
  // outside the browser (or an old browser's form) would send.
  const answer = await fetch(`${URL_}/ns/${NS}/queues/emails/pause`, {
    method: "POST",
    headers: { cookie: `dueq_session=${session.value}` },
    redirect: "manual",
  });
  assert.equal(answer.status, 403);
  const crossSite = await fetch(`${URL_}/ns/${NS}/queues/emails/pause`, {
    method: "POST",
    headers: { cookie: `dueq_session=${session.value}`, origin: "http://evil.example" },
    redirect: "manual",
  });
  assert.equal(crossSite.status, 403);
  await admin.goto(`${URL_}/ns/${NS}`);
  assert.equal(await admin.locator("table.queues tr[data-queue=emails] .badge.paused").count(), 0, "nothing paused");
  await admin.context().close();
});
