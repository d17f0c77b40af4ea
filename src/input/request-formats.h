/* src/input/request-formats.h — public request traces read as rows of requests: Mooncake's
 * JSON lines, Azure's LLM inference traces (2023, 2024), BurstGPT, ShareGPT as `vllm bench
 * serve` reads it, and Vidur's trace CSV. ranksim's own trace format (JSON lines or CSV of
 * arrival_s, prompt, output) stays in scenario-requests.c; this module tells them apart.
 *
 * The readers only read: a row's numbers are checked (ranges, prompt + output against the
 * model) by the caller, which names the file's line. Every field mapping, what is estimated
 * and why, is in doc/scenario-format.md ("Public traces").
 * Costs: O(bytes) to read; Mooncake's prefixes O(hash ids) with one hash table.
 */
#ifndef SRC_REQUEST_FORMATS_H
#define SRC_REQUEST_FORMATS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    REQUEST_FORMAT_AUTO = 0,
    REQUEST_FORMAT_RANKSIM,  /* JSON lines / CSV of arrival_s, prompt, output */
    REQUEST_FORMAT_MOONCAKE, /* JSON lines: timestamp (ms), input_length, output_length, hash_ids */
    REQUEST_FORMAT_AZURE,    /* CSV: TIMESTAMP (date and time), ContextTokens, GeneratedTokens */
    REQUEST_FORMAT_BURSTGPT, /* CSV: Timestamp (s), Model, Request tokens, Response tokens, ... */
    REQUEST_FORMAT_SHAREGPT, /* JSON array of {conversations: [{from, value}, ...]} */
    REQUEST_FORMAT_VIDUR,    /* CSV: num_prefill_tokens, num_decode_tokens[, arrived_at (s)] */
} RequestFormat;

/* "ranksim", "mooncake", "azure", "burstgpt", "sharegpt", "vidur" (and "auto"). */
bool request_format_parse(const char *name, RequestFormat *out);
const char *request_format_name(RequestFormat f);
/* The names request_format_parse takes, for messages. */
#define REQUEST_FORMAT_NAMES "auto, ranksim, mooncake, azure, burstgpt, sharegpt, vidur"

/* The format of a trace by its first line that is not blank or a '#' comment. Returns AUTO
 * with `why` (a message listing what each format starts with) when it is none of them. */
RequestFormat request_format_detect(const char *text, char **why);

typedef struct {
    guint line;         /* 1-based line of the row (ShareGPT: of its entry's opening) */
    double arrival_s;   /* NAN: the format carries no arrival time */
    double prompt;      /* tokens (estimated for text: see `estimated`) */
    double output;
    uint64_t prefix_id; /* > 0: shares its first `prefix` tokens with the other rows of the id */
    double prefix;
} RequestRow;

typedef struct {
    GArray *rows;       /* RequestRow, in the file's order */
    uint32_t skipped;   /* rows the format marks as not served (see `skip_why`) */
    const char *skip_why; /* static text, NULL when none was skipped */
    bool estimated;     /* token counts estimated from text (ShareGPT) */
} RequestTrace;

void request_trace_clear(RequestTrace *t);

/* Reads `text` (NUL-terminated, may be altered) of format `f` (not AUTO or RANKSIM) from `file`.
 * Returns false with `error` ("FILE:LINE: key 'KEY': what is wrong; valid: ...") on a row the
 * format cannot hold; the rows read so far are kept in `out`. */
bool request_trace_read(RequestFormat f, const char *file, char *text, RequestTrace *out,
                        GError **error);

/* Mooncake's block: each hash id stands for 512 prompt tokens (the trace's README; the
 * FAST'25 paper, section 3). */
#define REQUEST_MOONCAKE_BLOCK_TOKENS 512
/* ShareGPT's texts as tokens: one token per 4 characters, the rule of thumb of OpenAI's
 * tokenizer documentation for English text (no tokenizer is run). */
#define REQUEST_CHARS_PER_TOKEN 4.0

#endif
