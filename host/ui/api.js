// api.js — every request to the /ws/v1 API: adds the credentials' header,
// decodes JSON, and turns refusals ({"RemoteException": {exception, message}})
// and network failures into an ApiError with a status and a message.

import { authHeaders } from './credentials.js';

export class ApiError extends Error {
  constructor(status, message, exception = null) {
    super(message);
    this.status = status;
    this.exception = exception;
  }
}

/** The ApiError a failed response stands for. */
export async function errorOf(response) {
  let message = `${response.status} ${response.statusText}`.trim();
  let exception = null;
  try {
    const text = await response.text();
    try {
      const remote = JSON.parse(text).RemoteException;
      if (remote?.message) ({ message, exception } = remote);
    } catch {
      if (text) message = text.slice(0, 500);
    }
  } catch {
    // No body: the status says it.
  }
  return new ApiError(response.status, message, exception);
}

/** A request; `body` is JSON unless it is a Blob/ArrayBuffer (sent as is). */
export async function request(method, path, { body, contentType, accept = 'application/json', signal } = {}) {
  const headers = { ...authHeaders(), Accept: accept };
  let payload = body;
  if (body !== undefined && !(body instanceof Blob) && !(body instanceof ArrayBuffer)) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  if (contentType) headers['Content-Type'] = contentType;
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, signal, cache: 'no-store' });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, `the server did not answer (${error.message})`);
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

export const getJson = async (path, options) => (await request('GET', path, options)).json();

export async function sendJson(method, path, body) {
  const response = await request(method, path, { body });
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

export const getText = async (path) => (await request('GET', path, { accept: 'text/plain' })).text();

/** A path segment, encoded: ids and names are never trusted to be plain. */
export const segment = (text) => encodeURIComponent(text);
