// What the OpenAPI document says about one route beyond what the permission table and the
// schemas already say: its summary, its answer, the error codes its handler adds, an example.
import type { ErrorCode } from '../../shared/errors.js';

export interface OperationDoc {
  summary: string;
  description?: string;
  /** Component name of the success body (api/schemas/responses/); absent: no JSON body. */
  response?: string;
  /** A success body in another media type than JSON (`message/rfc822`), shown as a string. */
  media?: string;
  /** Success statuses, the first the usual one (upserts: 201 created, 200 existing). */
  status?: number[];
  /** What a success status means, where the usual words do not fit. */
  statusWords?: Record<number, string>;
  /** What domain-restricted keys get, where the usual words for the route's rule do not fit. */
  restrictedWords?: string;
  /** Codes the handler itself can answer, beyond those implied by the route's rule. */
  errors?: ErrorCode[];
  /** A request body that passes the route's body schema (checked by a test). */
  example?: unknown;
  /**
   * An upload route (the permission row's `upload`): the CSV as `text/csv` or as the multipart
   * part `file`; the component named here is the JSON of the form field `mapping` (null: none).
   */
  upload?: string | null;
}

export type OperationDocs = Record<string, OperationDoc>;
