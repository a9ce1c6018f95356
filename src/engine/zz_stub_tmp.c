/* TEMPORARY stubs until the types/config branch merges. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
struct act_config { int x; };
static const char *const N[] = {"cpu_op","user_annotation","gpu_user_annotation","gpu_memcpy","gpu_memset","kernel","external_correlation","runtime","driver","cpu_instant_event","python_function","overhead",0,0,"mtia_insight","cuda_sync","cuda_event",0,0,"cuda_profiler_range",0,0,0,"collective_comm",0,0,"xpu_scope_profiler","xpu_sync","gpu_pm_counter"};
const char *act_activity_type_name(act_activity_type t){ return (unsigned)t<=28? N[t]:NULL; }
int act_activity_set_has(const act_activity_set *s, act_activity_type t){ return (unsigned)t<64 && (s->bits[0]>>t&1); }
void act_config_activity_types(const act_config *c, act_activity_set *o){ (void)c; memset(o,0,sizeof*o); o->bits[0]=(1u<<29)-1; }
int act_config_get_int(const act_config *c, const char *k, int64_t *o){ (void)c; if(!strcmp(k,"BUFFER_PREALLOC_MB")){*o=160;return 0;} if(!strcmp(k,"MAX_BUFFER_SIZE_MB")){*o=4096;return 0;} return ACT_ENOENT; }
const char *act_config_get_str(const act_config *c, const char *k){ (void)c;(void)k; return NULL; }
int act_config_foreach(const act_config *c, act_config_visit_fn f, void *u){ (void)c;(void)f;(void)u; return 0; }
int act_config_dup(const act_config *c, act_config **o){ (void)c; *o=calloc(1,sizeof**o); return 0; }
int act_config_load_env(const act_config_parse_opts *p, act_config **o, act_parse_error *e){ (void)p;(void)e; *o=calloc(1,sizeof**o); return 0; }
int act_config_parse(const char *t, size_t l, const act_config_parse_opts *p, act_config **o, act_parse_error *e){ (void)t;(void)l;(void)p;(void)e;(void)o; return 0; }
void act_config_destroy(act_config *c){ free(c); }
