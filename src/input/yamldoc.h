/* src/input/yamldoc.h — the YAML machinery shared by the scenario and hardware loaders: an owned
 * tree with line numbers, one-line error messages, closest-key suggestions, and checked
 * conversion of scalars (numbers, strings, enums, booleans).
 *
 * libyaml's document API parses the text; the tree copies it with 1-based lines, rejecting
 * aliases, duplicate keys, non-scalar keys and a second document on the way. Interpreting the
 * tree is the caller's job, with the helpers below.
 *
 * Errors: every helper that can fail sets the one error of the load through YamlDoc.error in
 * SCENARIO_ERROR (src/input/scenario.h) and returns false (or NULL), so callers `return false` at
 * once and an error is never set twice. Messages are one line:
 *   "FILE:LINE: key 'KEY': problem; what would be valid"
 * or "FILE: --set PATH: key 'KEY': ..." for a value that came from --set.
 *
 * Costs: O(text) to parse and copy; map lookups are linear in the mapping's size (mappings in
 * these files are small); suggestions are O(candidates x 64^2).
 */
#ifndef SRC_YAMLDOC_H
#define SRC_YAMLDOC_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YAMLDOC_MAX_DEPTH 64           /* YAML nesting */
#define YAMLDOC_SUGGEST_MAX_DISTANCE 2 /* edit distance for "did you mean" */

typedef enum { YAMLDOC_SCALAR, YAMLDOC_SEQ, YAMLDOC_MAP } YamlDocType;

typedef struct {
    YamlDocType type;
    uint32_t line;    /* 1-based source line; 0 for nodes made by --set */
    char *set_path;   /* the --set key path that made this node, or NULL */
    char *text;       /* scalar text (never NULL for scalars); NULL otherwise */
    bool quoted;      /* scalar written quoted or as a block, not plain */
    GPtrArray *items; /* seq: YamlDocNode*; map: key, value, key, value, ... (YamlDocNode*) */
} YamlDocNode;

/* One document being loaded: where messages point and where the error goes. Borrowed
 * strings; lives on the caller's stack for the duration of the load. */
typedef struct {
    const char *file;            /* display name in messages ("scenarios/x.yaml") */
    const char *what;            /* "scenario file", "hardware file": for whole-file messages */
    const char *const *top_keys; /* NULL-terminated, listed when the file is empty */
    GError **error;              /* the load's error (may be NULL: errors are then dropped) */
} YamlDoc;

/* ---- the tree ---- */

/* Parses `text` (`len` bytes) into a tree whose root is a mapping. Returns NULL with the error
 * set (SCENARIO_ERROR_SYNTAX for malformed YAML, SCENARIO_ERROR_INVALID for an empty file, a
 * second document, aliases, duplicate or non-scalar keys, a non-mapping root). Caller owns the
 * tree. */
YamlDocNode *yamldoc_parse(YamlDoc *d, const char *text, size_t len);
void yamldoc_node_free(YamlDocNode *n);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(YamlDocNode, yamldoc_node_free)

/* Applies one --set "dotted.key=value" to the tree: the last key's value becomes a plain
 * scalar, missing keys and intermediate mappings are created. Returns false with the error set
 * for a missing '=', an empty key, or a path through a list or scalar. */
bool yamldoc_set(YamlDoc *d, YamlDocNode *root, const char *assignment);

uint32_t yamldoc_map_len(const YamlDocNode *m);
YamlDocNode *yamldoc_map_key(const YamlDocNode *m, uint32_t i);
YamlDocNode *yamldoc_map_value(const YamlDocNode *m, uint32_t i);
/* Index of `key` in mapping `m`, or -1 (keys are unique). */
int yamldoc_map_find(const YamlDocNode *m, const char *key);
/* The value of `key`, or NULL. */
YamlDocNode *yamldoc_map_get(const YamlDocNode *m, const char *key);
/* The key node of `key` (for messages about the key itself), or NULL. */
YamlDocNode *yamldoc_map_get_key(const YamlDocNode *m, const char *key);

/* A plain ~, null, Null, NULL or empty scalar. */
bool yamldoc_is_null(const YamlDocNode *n);
/* "a mapping", "a list", "nothing (null)", "'text'" or "the quoted string 'text'" (at most 40
 * characters shown). Caller frees. */
char *yamldoc_describe(const YamlDocNode *n);

/* ---- errors ---- */

/* "FILE:LINE" or "FILE: --set PATH" for node `at` (NULL: line 1). Caller frees. */
char *yamldoc_loc(const YamlDoc *d, const YamlDocNode *at);
/* Sets the error "LOC: key 'KEY': MESSAGE" (without the key part when `key` is NULL) with
 * `code` (a ScenarioErrorCode). Always returns false. */
bool yamldoc_fail_code(YamlDoc *d, int code, const YamlDocNode *at, const char *key,
                       const char *fmt, ...) G_GNUC_PRINTF(5, 6);
/* The same with SCENARIO_ERROR_INVALID. Always returns false. */
bool yamldoc_fail(YamlDoc *d, const YamlDocNode *at, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* ---- suggestions ---- */

/* Case-insensitive Levenshtein distance; SIZE_MAX for words longer than 64 bytes. */
size_t yamldoc_edit_distance(const char *a, const char *b);
/* The closest of `candidates` (NULL-terminated) to `word` if within
 * YAMLDOC_SUGGEST_MAX_DISTANCE and shorter than both words, else NULL. */
const char *yamldoc_closest(const char *word, const char *const *candidates);
/* "did you mean 'X'? (valid: a, b, c)" or "valid: a, b, c". Caller frees. */
char *yamldoc_suggestion(const char *word, const char *const *valid);

/* ---- checked conversions (each fails with a message naming `key` and what is valid) ---- */

/* An integer in [min, max]. Integral numbers in exponent or decimal form (1e6, 3.0) count. */
bool yamldoc_get_int(YamlDoc *d, const YamlDocNode *n, const char *key, int64_t min, int64_t max,
                     int64_t *out);
/* A finite number in [min, max], or (min, max] when min_exclusive. `unit` (or NULL) follows
 * the range in messages. */
bool yamldoc_get_number(YamlDoc *d, const YamlDocNode *n, const char *key, double min,
                        bool min_exclusive, double max, const char *unit, double *out);
/* A non-empty string scalar; *out points into the tree. `valid` describes what is expected. */
bool yamldoc_get_string(YamlDoc *d, const YamlDocNode *n, const char *key, const char *valid,
                        const char **out);
/* One of `names` (NULL-terminated); *out is its index. Unknown values get a suggestion. */
bool yamldoc_get_enum(YamlDoc *d, const YamlDocNode *n, const char *key, const char *const *names,
                      int *out);
/* A plain true/false (also True/TRUE/False/FALSE). */
bool yamldoc_get_bool(YamlDoc *d, const YamlDocNode *n, const char *key, bool *out);
bool yamldoc_expect_map(YamlDoc *d, const YamlDocNode *n, const char *key, const char *valid);
bool yamldoc_expect_seq(YamlDoc *d, const YamlDocNode *n, const char *key, const char *valid);
/* Every key of mapping `m` must be in `valid`. A key in `elsewhere` (valid in a sibling
 * context) gets "not valid for CONTEXT"; others "unknown key in CONTEXT" with a suggestion. */
bool yamldoc_check_keys(YamlDoc *d, const YamlDocNode *m, const char *const *valid,
                        const char *const *elsewhere, const char *context);

#endif
