/* Cerberus KVS library: result codes of the SNIA Key Value Storage API (v1.0), with the
 * names and values the Samsung KV-SSD kit's v1.6.0 headers give them, so programs written
 * for the kit compile unchanged. */
#ifndef KVS_RESULT_H
#define KVS_RESULT_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  KVS_SUCCESS = 0,
  KVS_ERR_BUFFER_SMALL = 0x001,             /* the output buffer is too small (data is partial) */
  KVS_ERR_DEV_CAPAPCITY = 0x002,            /* (sic, as the kit spells it) device too small */
  KVS_ERR_DEV_NOT_EXIST = 0x003,            /* no open device behind the handle */
  KVS_ERR_KS_CAPACITY = 0x004,              /* the key space's quota is full */
  KVS_ERR_KS_EXIST = 0x005,                 /* a key space of that name exists */
  KVS_ERR_KS_INDEX = 0x006,                 /* list index out of range */
  KVS_ERR_KS_NAME = 0x007,                  /* unusable key space name */
  KVS_ERR_KS_NOT_EXIST = 0x008,             /* no such key space (or not this tenant's) */
  KVS_ERR_KS_NOT_OPEN = 0x009,              /* key space handle not open */
  KVS_ERR_KS_OPEN = 0x00A,                  /* key space opened already on this device handle */
  KVS_ERR_ITERATOR_FILTER_INVALID = 0x00B,  /* bad key group filter */
  KVS_ERR_ITERATOR_MAX = 0x00C,             /* all iterator slots of the device handle in use */
  KVS_ERR_ITERATOR_NOT_EXIST = 0x00D,       /* no such iterator */
  KVS_ERR_ITERATOR_OPEN = 0x00E,            /* iterator open already */
  KVS_ERR_KEY_LENGTH_INVALID = 0x00F,       /* key length out of the device's range */
  KVS_ERR_KEY_NOT_EXIST = 0x010,            /* no such key */
  KVS_ERR_OPTION_INVALID = 0x011,           /* option not supported here */
  KVS_ERR_PARAM_INVALID = 0x012,            /* null or malformed argument */
  KVS_ERR_SYS_IO = 0x013,                   /* talking to the device failed */
  KVS_ERR_VALUE_LENGTH_INVALID = 0x014,     /* value length out of the device's range */
  KVS_ERR_VALUE_OFFSET_INVALID = 0x015,     /* retrieve offset past the value's end */
  KVS_ERR_VALUE_OFFSET_MISALIGNED = 0x016,  /* retrieve offset not a KVS_ALIGNMENT_UNIT multiple */
  KVS_ERR_VALUE_UPDATE_NOT_ALLOWED = 0x017, /* store refused: the key exists (no-overwrite) */
  KVS_ERR_DEV_NOT_OPENED = 0x018,           /* device not opened */
} kvs_result;

/* The spelling the specification's text uses. */
#define KVS_ERR_DEV_CAPACITY KVS_ERR_DEV_CAPAPCITY

#ifdef __cplusplus
}
#endif

#endif
