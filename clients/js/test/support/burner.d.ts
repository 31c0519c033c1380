// Types of burner.js for the Playwright test, which is TypeScript.
export interface Mail {
  host: string;
  port: number;
  from?: string;
  to: string;
  subject: string;
  text: string;
  headers?: Record<string, string>;
}
export interface RunningBurner {
  url: string;
  key: string;
  keys: { test: string; "scoped-ro": string; exact: string };
  smtpHost: string;
  smtpPort: number;
  log(): string;
  send(mail: Omit<Mail, "host" | "port">): Promise<void>;
  stop(): Promise<void>;
}
export function startBurner(): Promise<RunningBurner>;
export function sendMail(mail: Mail): Promise<void>;
