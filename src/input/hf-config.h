/* src/input/hf-config.h — a Hugging Face checkpoint's config files read from disk into a
 * ModelArch: config.json and what its folder keeps beside it (vLLM-Ascend's
 * quant_model_description.json, NVIDIA ModelOpt's hf_quant_config.json), each through the one
 * safe reader (src/util/inputfile.h: regular files only, at most 64 MiB, UTF-8); model/arch.h
 * parses the bytes.
 *
 * Errors are MODEL_ARCH_ERROR, so a caller routes them the same whether the file could not be
 * read (MODEL_ARCH_ERROR_IO: "PATH: cannot read the model config: ...", the file kind or the
 * system's reason) or parsed (MODEL_ARCH_ERROR_JSON / _FIELD: file, line, field). Costs: one
 * read of each file present, one parse.
 */
#ifndef SRC_INPUT_HF_CONFIG_H
#define SRC_INPUT_HF_CONFIG_H

#include <glib.h>
#include <stdbool.h>

#include "../../model/arch.h"

/* Loads the config.json at `path` (a file, not a folder); a quant_model_description.json in the
 * same folder gives the quantization, else an hf_quant_config.json there does when config.json
 * has no quantization_config. Returns false with `error` naming the file (and the field) on
 * failure; *out is written only on success. */
bool hf_config_load_file(const char *path, ModelArch *out, GError **error);

#endif
