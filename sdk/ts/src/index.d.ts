// Declarations of the agentmem client; the message types are generated from
// the node's OpenAPI document (types.d.ts).
import type {
  AppendReply, AppendRequest, ContextReply, CreateSessionReply, CreateSessionRequest, Entry, EntryHit,
  EntryReply, GetSessionReply, MessageInput, OpenAIMessage, AnthropicMessage, PutEntryRequest, RecallReply,
  RecallRequest, SearchHit, SearchRequest, StatusReply, WatchChange, EraseReceipt, Operations,
} from "./types.js";

export * from "./types.js";

export declare const RETRY_CODES: number[];

export declare class AgentmemError extends Error {
  constructor(code: number, field: string, message: string);
  /** The HTTP status: the API's code (400, 403, 404, 409, 413, 429, 503, ...); 0 when the node was not reached. */
  code: number;
  /** The input at fault (messages[0].role), "" when none. */
  field: string;
  detail: string;
}

export declare function agent(id: string): `agent/${string}`;
export declare function scope(kind: string, id: string): `scope/${string}/${string}`;

export interface ClientOptions {
  url?: string;
  token?: string;
  timeoutMs?: number;
  retries?: number;
  backoffMs?: number;
}

/** An entry whose base64 value is decoded. */
export interface DecodedEntry extends Entry {
  bytes?: Uint8Array;
  text?: string;
}

export declare class Client {
  constructor(opts?: ClientOptions);
  url: string;
  /** The stream sequence of this client's last write (passed as min_seq by search, recall, searchMemory). */
  lastSeq: bigint;
  call<K extends keyof Operations>(path: string, body?: Operations[K]["request"]): Promise<Operations[K]["reply"]>;
  call(path: string, body?: Record<string, unknown>): Promise<any>;
  createSession(id: string, fields?: CreateSessionRequest): Promise<CreateSessionReply>;
  append(id: string, messages: Array<MessageInput | OpenAIMessage>, fields?: Omit<AppendRequest, "messages">): Promise<AppendReply>;
  terminate(id: string, reason?: string, fields?: { command_id?: string }): Promise<StatusReply>;
  getSession(id: string): Promise<GetSessionReply>;
  context(id: string, format?: "openai" | "anthropic"): Promise<ContextReply>;
  openaiMessages(id: string): Promise<OpenAIMessage[]>;
  anthropic(id: string): Promise<{ system: string; messages: AnthropicMessage[] }>;
  search(id: string, query: string, fields?: Omit<SearchRequest, "query">): Promise<SearchHit[]>;
  recall(id: string, fields?: RecallRequest): Promise<RecallReply>;
  put(where: string, key: string, value: string | Uint8Array, fields?: Omit<PutEntryRequest, "key" | "value">): Promise<EntryReply>;
  get(where: string, key: string, version?: number): Promise<DecodedEntry>;
  delete(where: string, key: string, fields?: { command_id?: string }): Promise<EntryReply>;
  history(where: string, key: string): Promise<DecodedEntry[]>;
  searchMemory(where: string, query: string, fields?: { limit?: number }): Promise<EntryHit[]>;
  /** target: "session/<id>", "agent/<id>", "user/<id>" or "scope/<kind>/<id>". */
  erase(target: string, fields?: { command_id?: string; reason?: string }): Promise<EraseReceipt>;
  watch(target: string, opts?: { fromSeq?: number | bigint; maxChanges?: number; signal?: AbortSignal }): AsyncGenerator<WatchChange>;
}
