/* tests/src/input/test-hf-config.c — reading a checkpoint's config.json from disk: a missing
 * file, a folder, a FIFO and a device are refused with one MODEL_ARCH_ERROR_IO naming the path
 * and what it is, without a blocking open or an endless read. (Parsing the bytes is
 * tests/model/test-arch.c's.) */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../model/arch.h"
#include "../../../src/input/hf-config.h"

/* MODEL_ARCH_ERROR codes (model/arch.h). */
#define CODE_IO 0

#define assert_has(msg, sub)                                                                       \
    cr_assert(strstr((msg), (sub)) != NULL, "expected \"%s\" in: %s", (sub), (msg))

Test(errors, missing_file)
{
    g_autofree char *path =
        g_strdup_printf("%s/model/presets/no-such-model.json", RANKSIM_SOURCE_DIR);
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(hf_config_load_file(path, &a, &err));
    cr_assert_eq(err->domain, MODEL_ARCH_ERROR);
    cr_assert_eq(err->code, CODE_IO);
    g_autofree char *want =
        g_strdup_printf("%s: cannot read the model config: No such file or directory", path);
    cr_assert_str_eq(err->message, want);
    g_error_free(err);
}

Test(errors, directory)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-arch-XXXXXX", NULL);
    cr_assert_not_null(dir);
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(hf_config_load_file(dir, &a, &err));
    cr_assert_eq(g_rmdir(dir), 0);
    cr_assert_eq(err->code, CODE_IO);
    cr_assert(g_str_has_prefix(err->message, dir), "%s", err->message);
    assert_has(err->message, "it is a folder; expected a regular file");
    g_error_free(err);
}

/* A FIFO is refused without being opened for a blocking read; a device is never read. */
Test(errors, fifo_and_device)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-arch-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "config.json", NULL);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(hf_config_load_file(fifo, &a, &err));
    assert_has(err->message, "it is a FIFO");
    g_clear_error(&err);
    cr_assert_not(hf_config_load_file("/dev/zero", &a, &err));
    assert_has(err->message, "it is a device");
    g_clear_error(&err);
    g_unlink(fifo);
    g_rmdir(dir);
}
