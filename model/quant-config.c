/* model/quant-config.c — reading a checkpoint's quantization_config into a ModelQuantSpec.
 * PLACEHOLDER while the parser is written: every checkpoint is read as its native dtype and
 * the override names map to ranksim's schemes without ignore lists. */
#include "quant.h"

#include <string.h>

const char *model_quant_methods(void)
{
    return "fp8";
}

bool model_quant_from_config(JsonObject *qcfg, const char *display, ModelWeightKind native,
                             const ModelQuantNames *names, ModelQuantSpec *out, GError **error)
{
    (void)qcfg, (void)display, (void)error;
    model_quant_spec_native(out, native, names ? names->num_layers + names->num_mtp_layers : 0);
    return true;
}

bool model_quant_from_ascend(JsonObject *desc, const char *display, ModelWeightKind native,
                             const ModelQuantNames *names, ModelQuantSpec *out, GError **error)
{
    return model_quant_from_config(desc, display, native, names, out, error);
}

bool model_quant_spec_from_name(const char *name, bool moe, ModelWeightKind native,
                                uint32_t n_layers, ModelQuantSpec *out)
{
    (void)moe;
    model_quant_spec_native(out, native, n_layers);
    return strcmp(name, "bf16") == 0;
}
