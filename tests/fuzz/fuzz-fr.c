/* tests/fuzz/fuzz-fr.c — libFuzzer target: Flight Recorder dumps as `ranksim import` reads them
 * (src/import/import-fr.c over src/import/lite.c for JSON, src/import/pickle.c for pickles), then the whole import:
 * the merge into a set, the run (each rank's blocking point, records), the diagnosis by
 * sched_postmortem, and the report and explanation of the outcome.
 *
 * An input is up to four dumps separated by a line "----" (ranks 0, 1, 2, 3 in that order), so
 * the fuzzer can make dumps that disagree with each other: PGs with other members, a rank twice,
 * sizes that mismatch, cycles.
 */
#include "fuzz-common.h"

#include "../../src/output/explain.h"
#include "../../src/import/import.h"
#include "../../src/output/report.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char sep[] = "\n----\n";
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_FR);
    size_t off = 0;
    bool ok = true;
    for (int part = 0; part < 4 && off <= size && ok; part++) {
        const uint8_t *end = size - off >= sizeof sep - 1
                                 ? memmem(data + off, size - off, sep, sizeof sep - 1)
                                 : NULL;
        size_t len = end ? (size_t)(end - (data + off)) : size - off;
        /* The bytes of one file, NUL-terminated as input_file_read_bytes gives them. */
        g_autofree guint8 *buf = g_malloc(len + 1);
        memcpy(buf, data + off, len);
        buf[len] = 0;
        g_autofree char *path = g_strdup_printf("fuzz/nccl_trace_rank_%d", part);
        GError *err = NULL;
        ok = import_fr_file(s, path, buf, len, part == 3, &err);
        if (ok != (err == NULL))
            abort(); /* the contract: false <=> an error */
        g_clear_error(&err);
        if (!end)
            break;
        off += len + sizeof sep - 1;
    }
    if (!ok || s->ranks->len == 0)
        return 0;
    g_autoptr(ImportRun) run = import_run_build(s);
    StoreRunInfo rr = {.id = -1, .name = "fuzz", .kind = "import", .status = "failed"};
    report_text(fuzz_devnull, &rr, run->outcome);
    explain_text_recorded(fuzz_devnull, "fuzz", run->outcome, true);
    g_free(explain_dot("fuzz", run->outcome));
    return 0;
}
