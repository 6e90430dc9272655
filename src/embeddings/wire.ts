/**
 * The OpenAI embeddings wire format (`POST {base}/embeddings`), which OpenAI, Ollama, TEI, vLLM
 * and others speak: the request the client sends and the twin reads, the answer the twin writes
 * and the client reads. One definition for both sides (issue #32).
 */
import { z } from 'zod';

export const EmbeddingsRequestSchema = z.object({
  input: z.union([z.string(), z.array(z.string()).min(1)]),
  model: z.string().min(1),
  dimensions: z.number().int().min(1).optional(),
  encoding_format: z.enum(['float', 'base64']).optional(),
  user: z.string().optional(),
});
export type EmbeddingsRequest = z.infer<typeof EmbeddingsRequestSchema>;

export const EmbeddingsResponseSchema = z.object({
  object: z.literal('list'),
  data: z.array(
    z.object({
      object: z.literal('embedding'),
      index: z.number().int().min(0),
      embedding: z.array(z.number()),
    }),
  ),
  model: z.string(),
  usage: z.object({ prompt_tokens: z.number().int().min(0), total_tokens: z.number().int().min(0) }),
});
export type EmbeddingsResponse = z.infer<typeof EmbeddingsResponseSchema>;

/** OpenAI's error object (`{ error: { message, type, param, code } }`), read liberally. */
export const EmbeddingsErrorSchema = z.object({
  error: z.object({
    message: z.string(),
    type: z.string().nullish(),
    param: z.string().nullish(),
    code: z.union([z.string(), z.number()]).nullish(),
  }),
});
export type EmbeddingsErrorBody = z.infer<typeof EmbeddingsErrorSchema>;
