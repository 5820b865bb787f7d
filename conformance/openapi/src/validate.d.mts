export interface Contract {
  reply(method: string, path: string, status: number, body: unknown): string;
  request(path: string, body: unknown): string;
  requestSchema(path: string): unknown;
}
export declare function contract(doc: unknown): Contract;
