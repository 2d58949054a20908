// The part of Tauri's global API (`app.withGlobalTauri`) that the UI uses.

export interface TauriChannel<T> {
  /** Called for every message the host sends on this channel, in order. */
  onmessage: (message: T) => void;
  readonly id: number;
}

export interface TauriCore {
  /** Calls a host command; resolves with its reply, rejects with its error value. */
  invoke<T = unknown>(cmd: string, args?: unknown, options?: { headers?: Record<string, string> }): Promise<T>;
  Channel: new <T = unknown>(onmessage?: (message: T) => void) => TauriChannel<T>;
}

declare global {
  interface Window {
    __TAURI__?: { core: TauriCore };
  }
}
