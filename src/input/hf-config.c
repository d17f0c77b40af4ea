/* src/input/hf-config.c — a checkpoint's config files from disk (see hf-config.h). */
#include "hf-config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/inputfile.h"

#define MAX_CONFIG_BYTES ((gsize)64 << 20) /* a config.json is a few KiB */

/* What `path` is, once the reader has refused it as not a regular file (a stat for the
 * message only: nothing is opened). */
static const char *file_kind(const char *path)
{
    GStatBuf st;
    if (g_stat(path, &st) != 0)
        return "not a regular file";
    return S_ISDIR(st.st_mode)                          ? "a folder"
           : S_ISFIFO(st.st_mode)                       ? "a FIFO"
           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                        : "not a regular file";
}

/* Why `path` could not be opened, as the system says it (the reader's error `e` when neither a
 * stat nor an access check finds the reason). */
static const char *open_reason(const char *path, const GError *e)
{
    GStatBuf st;
    if (g_stat(path, &st) != 0 || g_access(path, R_OK) != 0)
        return g_strerror(errno);
    return input_reason(e, path);
}

/* Reads one of the checkpoint's JSON files whole; the reader's refusals become
 * MODEL_ARCH_ERROR in the model config's words (the encoding's as a JSON error). Caller frees. */
static char *read_config(const char *path, gsize *len, GError **error)
{
    g_autoptr(GError) e = NULL;
    char *text = input_file_read(path, MAX_CONFIG_BYTES, len, &e);
    if (text)
        return text;
    switch (e->code) {
    case INPUT_ERROR_NOT_REGULAR:
        g_set_error(error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO,
                    "%s: cannot read the model config: it is %s; expected a regular file "
                    "(a config.json)",
                    path, file_kind(path));
        break;
    case INPUT_ERROR_TOO_BIG:
        g_set_error(error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO,
                    "%s: larger than %" G_GSIZE_FORMAT " MiB; expected a config.json of a few KiB",
                    path, MAX_CONFIG_BYTES >> 20);
        break;
    case INPUT_ERROR_ENCODING:
        g_set_error_literal(error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON, e->message);
        break;
    default:
        g_set_error(error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO,
                    "%s: cannot read the model config: %s", path, open_reason(path, e));
        break;
    }
    return NULL;
}

bool hf_config_load_file(const char *path, ModelArch *out, GError **error)
{
    g_return_val_if_fail(path != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    ModelArchText config = {.display = path};
    g_autofree char *text = read_config(path, &config.len, error);
    if (!text)
        return false;
    config.data = text;
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *desc_path = g_build_filename(dir, MODEL_ARCH_ASCEND_DESCRIPTION, NULL);
    ModelArchText desc = {.display = desc_path};
    g_autofree char *desc_text = NULL;
    if (g_file_test(desc_path, G_FILE_TEST_IS_REGULAR)) {
        desc_text = read_config(desc_path, &desc.len, error);
        if (!desc_text)
            return false;
        desc.data = desc_text;
    }
    g_autofree ModelArch *a = g_new0(ModelArch, 1);
    if (!model_arch_load_config(&config, desc_text ? &desc : NULL, a, error))
        return false;
    /* ModelOpt's scheme, when neither config.json nor an Ascend description gave one */
    g_autofree char *hf_path = g_build_filename(dir, MODEL_ARCH_HF_QUANT_CONFIG, NULL);
    if (!desc_text && !a->quant.method[0] && g_file_test(hf_path, G_FILE_TEST_IS_REGULAR)) {
        gsize hlen = 0;
        g_autofree char *htext = read_config(hf_path, &hlen, error);
        if (!htext || !model_arch_apply_quant_json(a, htext, hf_path, error))
            return false;
    }
    memcpy(out, a, sizeof *a);
    return true;
}
