// Where and how to connect: the options given to Client, else the DUEQ_* environment
// variables the dueq CLI reads, else the defaults.

import { invalid } from "./errors";

/** Options of {@link Client}; each one not given is read from its DUEQ_* variable. */
export interface ClientOptions {
  /** `http://host:port`, or `https://host:port` for TLS (DUEQ_ADDR; default `http://127.0.0.1:50051`). */
  addr?: string;
  /** Bearer token sent as `authorization: Bearer <token>` with every call (DUEQ_TOKEN). */
  token?: string;
  /** Namespace of every call (DUEQ_NAMESPACE; default `default`). */
  namespace?: string;
  /** PEM file of the CA to trust for the service's certificate (DUEQ_TLS_CA). Implies TLS. */
  tlsCa?: string;
  /** PEM file of the client certificate, for mTLS (DUEQ_TLS_CLIENT_CERT). Needs tlsKey. */
  tlsCert?: string;
  /** PEM file of the client certificate's key (DUEQ_TLS_CLIENT_KEY). Needs tlsCert. */
  tlsKey?: string;
  /** The name to check the service's certificate against, when not the host of addr (DUEQ_TLS_SERVER_NAME). */
  tlsServerName?: string;
  /** Deadline of each unary call, in milliseconds (default 10,000). */
  timeoutMs?: number;
  /** Largest payload the client sends, in bytes (default 1 MiB, the service's default). */
  maxPayloadSize?: number;
}

/** The connection settings once options and environment are merged and checked. */
export interface ResolvedConfig {
  /** host:port for grpc-js. */
  target: string;
  tls: boolean;
  token?: string;
  namespace: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServerName?: string;
  timeoutMs: number;
  maxPayloadSize: number;
}

export const DEFAULT_ADDR = "http://127.0.0.1:50051";
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** An option, else its variable (an empty variable counts as unset). */
function pick(value: string | undefined, env: NodeJS.ProcessEnv, name: string): string | undefined {
  if (value !== undefined) return value;
  const v = env[name];
  return v === undefined || v === "" ? undefined : v;
}

/**
 * Merges `options` over the DUEQ_* variables of `env`; throws InvalidArgument naming
 * the option for a bad value.
 */
export function resolveConfig(options: ClientOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  // Unset, the address takes its scheme from the TLS options.
  const addr = pick(options.addr, env, "DUEQ_ADDR") ?? DEFAULT_ADDR.slice("http://".length);
  const tlsCa = pick(options.tlsCa, env, "DUEQ_TLS_CA");
  const tlsCert = pick(options.tlsCert, env, "DUEQ_TLS_CLIENT_CERT");
  const tlsKey = pick(options.tlsKey, env, "DUEQ_TLS_CLIENT_KEY");
  const tlsServerName = pick(options.tlsServerName, env, "DUEQ_TLS_SERVER_NAME");
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw invalid(tlsCert === undefined ? "tlsCert" : "tlsKey", "a client certificate needs both tlsCert and tlsKey");
  }
  const match = /^(?:(https?):\/\/)?([^/]+?)\/?$/.exec(addr);
  if (!match) throw invalid("addr", `expected http://host:port or https://host:port, got ${JSON.stringify(addr)}`);
  const [, scheme, hostPort] = match;
  const tls = scheme === "https" || tlsCa !== undefined || tlsCert !== undefined || tlsKey !== undefined;
  if (scheme === "http" && tls) {
    throw invalid("addr", `TLS options given with a plaintext address ${JSON.stringify(addr)}: use https://`);
  }
  const target = /:\d+$/.test(hostPort) ? hostPort : `${hostPort}:${tls ? 443 : 80}`;
  const namespace = pick(options.namespace, env, "DUEQ_NAMESPACE") ?? "default";
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) throw invalid("timeoutMs", `must be a positive number, got ${timeoutMs}`);
  const maxPayloadSize = options.maxPayloadSize ?? DEFAULT_MAX_PAYLOAD;
  if (!Number.isInteger(maxPayloadSize) || maxPayloadSize < 0) {
    throw invalid("maxPayloadSize", `must be a whole number of bytes, got ${maxPayloadSize}`);
  }
  const token = pick(options.token, env, "DUEQ_TOKEN");
  return { target, tls, token, namespace, tlsCa, tlsCert, tlsKey, tlsServerName, timeoutMs, maxPayloadSize };
}
