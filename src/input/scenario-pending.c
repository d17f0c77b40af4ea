/* src/input/scenario-pending.c — the rest of a load kept for after serving
 * (src/input/scenario-pending.h). */
#include "scenario-pending.h"

ScenarioPending *scenario_pending_new(void)
{
    return g_new0(ScenarioPending, 1);
}

void scenario_pending_free(ScenarioPending *p)
{
    if (!p)
        return;
    yamldoc_node_free(p->root);
    g_free(p);
}

void scenario_pending_keep_tree(ScenarioPending *p, YamlDocNode *root)
{
    yamldoc_node_free(p->root);
    p->root = root;
}
