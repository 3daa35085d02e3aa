#ifndef MEMO_PEER_CYAML_SHIM_H
#define MEMO_PEER_CYAML_SHIM_H
#include <yaml.h>
#endif
