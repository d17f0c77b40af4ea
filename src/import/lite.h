/* src/import/lite.h — a compact, read-only document tree for the large inputs of `ranksim import`: a
 * strict JSON parser (RFC 8259) into one arena per document, and the same tree built from a
 * json-glib node (the pickle reader's output).
 *
 * Why not json-glib for everything: a 1,024-rank Flight Recorder set is about 1 GiB of JSON,
 * two million entries of twenty members each; json-glib spends most of its time in malloc and
 * hash tables for those. Here a document is two arrays (values, children with their keys) over
 * the input itself, whose strings are unescaped where they stand; members are found by a
 * linear scan (dump objects have about twenty), and nothing is freed
 * but the whole document. Parsing runs at a few hundred MB/s.
 *
 * Values are referred to by index (LiteRef); accessors take the document. Costs: O(input)
 * time and memory; nesting is limited to LITE_MAX_DEPTH.
 */
#ifndef SRC_LITE_H
#define SRC_LITE_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>

#define LITE_MAX_DEPTH 512

typedef enum {
    LITE_NULL = 0,
    LITE_BOOL,
    LITE_INT,
    LITE_DOUBLE,
    LITE_STRING,
    LITE_ARRAY,
    LITE_OBJECT,
} LiteType;

typedef uint32_t LiteRef; /* index of a value; LITE_NONE for "absent" */
#define LITE_NONE UINT32_MAX

typedef struct LiteDoc LiteDoc;

/* Parses `len` bytes of JSON (below 4 GiB) **in place**: strings are unescaped and
 * NUL-terminated inside `data`, which must outlive the document and is left altered. UTF-8 is
 * checked inside strings (the only place JSON allows non-ASCII). NULL with a G_IO_ERROR_INVALID_DATA
 * "WHAT:LINE:COL: reason" on malformed input, nesting beyond LITE_MAX_DEPTH, an integer outside
 * int64 (read as a double only when it has a fraction or exponent), or more than 2^32 values. */
LiteDoc *lite_parse_json(char *data, gsize len, const char *what, GError **error);
/* An empty document to parse into, again and again (lite_doc_parse_json): the arenas are
 * reused. */
LiteDoc *lite_doc_new(void);
/* Parses into `d`, replacing what it held; false with the error (then `d` holds nothing). */
bool lite_doc_parse_json(LiteDoc *d, char *data, gsize len, const char *what, GError **error);
/* The same tree from a json-glib node. */
LiteDoc *lite_from_json_node(JsonNode *node);
void lite_free(LiteDoc *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LiteDoc, lite_free)

LiteRef lite_root(const LiteDoc *d);
LiteType lite_type(const LiteDoc *d, LiteRef v);
/* Array or object member count. */
uint32_t lite_len(const LiteDoc *d, LiteRef v);
/* The i-th element of an array, or the value of the i-th member of an object. */
LiteRef lite_at(const LiteDoc *d, LiteRef v, uint32_t i);
/* The key of the i-th member of an object (NUL-terminated; valid while `d` lives). */
const char *lite_key_at(const LiteDoc *d, LiteRef v, uint32_t i);
/* The member `key` of object `v`, LITE_NONE if absent or `v` is not an object. */
LiteRef lite_get(const LiteDoc *d, LiteRef v, const char *key);

bool lite_bool(const LiteDoc *d, LiteRef v);
int64_t lite_int(const LiteDoc *d, LiteRef v);
double lite_double(const LiteDoc *d, LiteRef v); /* also of an int */
const char *lite_str(const LiteDoc *d, LiteRef v); /* NUL-terminated; NULL if not a string */

#endif
