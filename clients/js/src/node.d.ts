// The little of Node's API the client uses, declared here so that the
// package needs no @types/node: fetch and the rest come from the DOM
// library, which Node ≥ 18 implements.

declare module "node:crypto" {
  export function getRandomValues<T extends ArrayBufferView>(array: T): T;
}

declare const process: { env: Record<string, string | undefined> };
