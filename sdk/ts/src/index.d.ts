// Declarations of the agentmem client; the message types are generated from
// the node's OpenAPI document (types.d.ts).
import type {
  AppendReply, AppendRequest, ContextReply, CreateSessionReply, CreateSessionRequest, Entry, EntryHit,
  EntryReply, GetSessionReply, MessageInput, OpenAIMessage, AnthropicMessage, PutEntryRequest, RecallReply,
  RecallRequest, SearchHit, SearchRequest, StatusReply, WatchChange, EraseReceipt, Operations,
  ConsolidateReply, Conflict, ScopeConfigInput, ConfigureScopeReply, DeleteEntryRequest,
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
/** Merges consistency token lists ("k6:p3:1842,k6:p0:12"): the highest sequence per partition; tokens of another partition count than the last list's are dropped. */
export declare function mergeConsistency(...lists: Array<string | undefined>): string;

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
  /** The consistency tokens of this client's writes, merged (passed as consistency by search, recall, searchMemory, with min_seq). */
  consistency: string;
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
  delete(where: string, key: string, fields: Omit<DeleteEntryRequest, "key"> & { erase: true }): Promise<EraseReceipt>;
  delete(where: string, key: string, fields?: Omit<DeleteEntryRequest, "key" | "erase" | "reason"> & { erase?: false }): Promise<EntryReply>;
  configure(where: string, config: ScopeConfigInput, fields?: { command_id?: string }): Promise<ConfigureScopeReply>;
  history(where: string, key: string): Promise<DecodedEntry[]>;
  searchMemory(where: string, query: string, fields?: { limit?: number }): Promise<EntryHit[]>;
  /** target: "session/<id>", "agent/<id>", "user/<id>" or "scope/<kind>/<id>". */
  erase(target: string, fields?: { command_id?: string; reason?: string }): Promise<EraseReceipt>;
  eraseSession(id: string, fields?: { command_id?: string; reason?: string }): Promise<EraseReceipt>;
  eraseUser(id: string, fields?: { command_id?: string; reason?: string }): Promise<EraseReceipt>;
  eraseAgent(id: string, fields?: { command_id?: string; reason?: string }): Promise<EraseReceipt>;
  eraseScope(kind: string, id: string, fields?: { command_id?: string; reason?: string }): Promise<EraseReceipt>;
  /** Every version of key leaves the log (delete with erase: true); a retry with the same command_id answers the same receipt. */
  eraseEntry(where: string, key: string, fields?: { command_id?: string; reason?: string; by?: string }): Promise<EraseReceipt>;
  /** The facts the user stated in session id, into long-term memory now; dryRun writes nothing. */
  consolidate(id: string, opts?: { dryRun?: boolean }): Promise<ConsolidateReply>;
  conflicts(where: string, fields?: { limit?: number }): Promise<Array<Conflict & { current?: DecodedEntry; proposed?: DecodedEntry }>>;
  settle(where: string, key: string, accept: boolean, fields?: { command_id?: string; by?: string }): Promise<EntryReply>;
  watch(target: string, opts?: { fromSeq?: number | bigint; maxChanges?: number; signal?: AbortSignal }): AsyncGenerator<WatchChange>;
}
