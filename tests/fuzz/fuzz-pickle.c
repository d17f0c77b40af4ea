/* tests/fuzz/fuzz-pickle.c — libFuzzer target: a pickle (a Flight Recorder dump,
 * `nccl_trace_rank_<R>`) read with pickle_parse_limits (src/import/pickle.h).
 *
 * Input: raw bytes, NUL bytes included (a dump is binary). Checked on every input: the result
 * is a tree or a G_IO_ERROR_INVALID_DATA error, never both, never neither; the message is one
 * line, "fuzz.pkl: pickle byte N: REASON" with N within the input; an accepted tree holds at
 * most FUZZ_PICKLE_MAX_NODES values, nests at most PICKLE_MAX_DEPTH containers, and has only
 * valid UTF-8 strings and member names. The node cap is lower than pickle_parse's 4 Mi so
 * that a memo bomb just under it stays within -rss_limit_mb under ASan.
 */
#include "fuzz-common.h"

#include <gio/gio.h>

#include "../../src/import/pickle.h"

#define FUZZ_PICKLE_MAX_NODES (G_GUINT64_CONSTANT(1) << 18)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

static void fuzz_abort(const char *why, const char *detail)
{
    fprintf(stderr, "fuzz: pickle: %s: %s\n", why, detail);
    abort();
}

/* Counts the values under `n` (itself included) and checks depth and strings. */
static guint64 check_tree(JsonNode *n, guint depth)
{
    guint64 count = 1;
    switch (JSON_NODE_TYPE(n)) {
    case JSON_NODE_OBJECT: {
        if (depth + 1 > PICKLE_MAX_DEPTH)
            fuzz_abort("accepted a tree nested too deep", "object");
        JsonObjectIter it;
        const char *name;
        JsonNode *child;
        json_object_iter_init(&it, json_node_get_object(n));
        while (json_object_iter_next(&it, &name, &child)) {
            if (!g_utf8_validate(name, -1, NULL))
                fuzz_abort("a member name is not UTF-8", name);
            count += check_tree(child, depth + 1);
        }
        break;
    }
    case JSON_NODE_ARRAY: {
        if (depth + 1 > PICKLE_MAX_DEPTH)
            fuzz_abort("accepted a tree nested too deep", "array");
        JsonArray *a = json_node_get_array(n);
        for (guint i = 0; i < json_array_get_length(a); i++)
            count += check_tree(json_array_get_element(a, i), depth + 1);
        break;
    }
    case JSON_NODE_VALUE:
        if (json_node_get_value_type(n) == G_TYPE_STRING &&
            !g_utf8_validate(json_node_get_string(n), -1, NULL))
            fuzz_abort("a string is not UTF-8", json_node_get_string(n));
        break;
    case JSON_NODE_NULL:
        break;
    }
    return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PickleLimits lim = {.max_nodes = FUZZ_PICKLE_MAX_NODES};
    GError *err = NULL;
    JsonNode *root = pickle_parse_limits(data, size, "fuzz.pkl", &lim, &err);
    fuzz_check_error("pickle_parse_limits", root != NULL, err);
    if (!root) {
        if (!g_error_matches(err, G_IO_ERROR, G_IO_ERROR_INVALID_DATA))
            fuzz_abort("not a G_IO_ERROR_INVALID_DATA error", err->message);
        if (strchr(err->message, '\n'))
            fuzz_abort("a message of more than one line", err->message);
        const char *prefix = "fuzz.pkl: pickle byte ";
        if (!g_str_has_prefix(err->message, prefix))
            fuzz_abort("a message without the input and offset", err->message);
        char *end = NULL;
        guint64 at = g_ascii_strtoull(err->message + strlen(prefix), &end, 10);
        if (end == err->message + strlen(prefix) || strncmp(end, ": ", 2) != 0 || at > size)
            fuzz_abort("an offset that is not in the input", err->message);
        g_error_free(err);
        return 0;
    }
    if (check_tree(root, 0) > FUZZ_PICKLE_MAX_NODES)
        fuzz_abort("accepted a tree over the node cap", "");
    json_node_unref(root);
    return 0;
}
