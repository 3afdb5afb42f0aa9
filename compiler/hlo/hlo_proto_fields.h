/* ncc HloModuleProto schema: the field numbers and enum values of OpenXLA's hlo.proto and xla_data.proto that the proto decoder reads. */
#ifndef NCC_HLO_PROTO_FIELDS_H
#define NCC_HLO_PROTO_FIELDS_H

/*
 * Numbers from OpenXLA's xla/service/hlo.proto and xla/xla_data.proto (the schema
 * PyTorch/XLA 2.x and JAX serialize). Protobuf numbers never change meaning once
 * published, so these hold for older and newer producers alike; a field this list
 * does not name is skipped as unknown. Each group names the message it belongs to.
 */

/* xla.HloModuleProto (hlo.proto) */
enum {
	HPF_MODULE_NAME = 1,                   /* string */
	HPF_MODULE_ENTRY_COMPUTATION_NAME = 2, /* string */
	HPF_MODULE_COMPUTATIONS = 3,           /* repeated HloComputationProto */
	HPF_MODULE_HOST_PROGRAM_SHAPE = 4,     /* ProgramShapeProto */
	HPF_MODULE_ENTRY_COMPUTATION_ID = 6,   /* int64 */
	HPF_MODULE_SCHEDULE = 7,               /* HloScheduleProto */
	HPF_MODULE_INPUT_OUTPUT_ALIAS = 8,     /* HloInputOutputAliasProto */
	HPF_MODULE_DEVICE_ASSIGNMENT = 15,     /* DeviceAssignmentProto */
	HPF_MODULE_BUFFER_DONOR = 18,          /* HloBufferDonorProto */
	HPF_MODULE_FRONTEND_ATTRIBUTES = 19,   /* FrontendAttributes */
};

/* xla.HloComputationProto (hlo.proto) */
enum {
	HPF_COMP_NAME = 1,         /* string */
	HPF_COMP_INSTRUCTIONS = 2, /* repeated HloInstructionProto, operands first */
	HPF_COMP_ID = 5,           /* int64 */
	HPF_COMP_ROOT_ID = 6,      /* int64 */
};

/* xla.HloInstructionProto (hlo.proto) */
enum {
	HPF_INST_NAME = 1,                      /* string */
	HPF_INST_OPCODE = 2,                    /* string */
	HPF_INST_SHAPE = 3,                     /* ShapeProto */
	HPF_INST_METADATA = 7,                  /* OpMetadata */
	HPF_INST_LITERAL = 8,                   /* LiteralProto */
	HPF_INST_PARAMETER_NUMBER = 9,          /* int64 */
	HPF_INST_FUSION_KIND = 11,              /* string */
	HPF_INST_TUPLE_INDEX = 13,              /* int64 */
	HPF_INST_DIMENSIONS = 14,               /* repeated int64 */
	HPF_INST_WINDOW = 15,                   /* Window */
	HPF_INST_CONV_DNUMS = 16,               /* ConvolutionDimensionNumbers */
	HPF_INST_SLICE_DIMENSIONS = 17,         /* repeated SliceDimensions */
	HPF_INST_EXPONENT_BITS = 18,            /* int32 */
	HPF_INST_MANTISSA_BITS = 19,            /* int32 */
	HPF_INST_DYNAMIC_SLICE_SIZES = 20,      /* repeated int64 */
	HPF_INST_PADDING_CONFIG = 21,           /* PaddingConfig */
	HPF_INST_DISTRIBUTION = 23,             /* RandomDistribution */
	HPF_INST_EPSILON = 24,                  /* float */
	HPF_INST_FEATURE_INDEX = 25,            /* int64 */
	HPF_INST_CHANNEL_ID = 26,               /* int64; <= 0 means none */
	HPF_INST_CUSTOM_CALL_TARGET = 28,       /* string */
	HPF_INST_DOT_DNUMS = 30,                /* DotDimensionNumbers */
	HPF_INST_FFT_TYPE = 31,                 /* FftType */
	HPF_INST_FFT_LENGTH = 32,               /* repeated int64 */
	HPF_INST_GATHER_DNUMS = 33,             /* GatherDimensionNumbers */
	HPF_INST_GATHER_SLICE_SIZES = 34,       /* repeated int64 */
	HPF_INST_ID = 35,                       /* int64, unique in the module */
	HPF_INST_OPERAND_IDS = 36,              /* repeated int64 */
	HPF_INST_CONTROL_PREDECESSOR_IDS = 37,  /* repeated int64 */
	HPF_INST_CALLED_COMPUTATION_IDS = 38,   /* repeated int64 */
	HPF_INST_SHARDING = 40,                 /* OpSharding */
	HPF_INST_BACKEND_CONFIG = 43,           /* bytes */
	HPF_INST_SCATTER_DNUMS = 48,            /* ScatterDimensionNumbers */
	HPF_INST_REPLICA_GROUPS = 49,           /* repeated ReplicaGroup (deprecated form) */
	HPF_INST_FEATURE_GROUP_COUNT = 50,      /* int64 */
	HPF_INST_PRECISION_CONFIG = 51,         /* PrecisionConfig */
	HPF_INST_SOURCE_TARGET_PAIRS = 52,      /* repeated SourceTarget */
	HPF_INST_CONSTRAIN_LAYOUT = 56,         /* bool */
	HPF_INST_OPERAND_SHAPES_WITH_LAYOUT = 57, /* repeated ShapeProto */
	HPF_INST_BATCH_GROUP_COUNT = 58,        /* int64 */
	HPF_INST_TRIANGULAR_SOLVE_OPTIONS = 59, /* TriangularSolveOptions */
	HPF_INST_IS_STABLE = 60,                /* bool */
	HPF_INST_PARAMETER_REPLICATION = 61,    /* ParameterReplication */
	HPF_INST_CHOLESKY_OPTIONS = 62,         /* CholeskyOptions */
	HPF_INST_COMPARISON_DIRECTION = 63,     /* string: EQ NE LT LE GT GE */
	HPF_INST_CUSTOM_CALL_HAS_SIDE_EFFECT = 65, /* bool */
	HPF_INST_INDICES_ARE_SORTED = 67,       /* bool */
	HPF_INST_FRONTEND_ATTRIBUTES = 68,      /* FrontendAttributes */
	HPF_INST_UNIQUE_INDICES = 69,           /* bool */
	HPF_INST_RNG_ALGORITHM = 70,            /* RandomAlgorithm */
	HPF_INST_USE_GLOBAL_DEVICE_IDS = 71,    /* bool */
	HPF_INST_COMPARISON_TYPE = 72,          /* string: FLOAT TOTALORDER SIGNED UNSIGNED */
	HPF_INST_OUTPUT_OPERAND_ALIASING = 74,  /* repeated OutputOperandAliasing */
	HPF_INST_CUSTOM_CALL_SCHEDULE = 76,     /* CustomCallSchedule */
	HPF_INST_CUSTOM_CALL_API_VERSION = 77,  /* CustomCallApiVersion */
	HPF_INST_K = 81,                        /* int64, topk */
	HPF_INST_LARGEST = 85,                  /* bool, topk */
	HPF_INST_COLLECTIVE_DEVICE_LIST = 87,   /* CollectiveDeviceListProto */
};

/* xla.HloInstructionProto.SliceDimensions (hlo.proto) */
enum { HPF_SLICE_START = 1, HPF_SLICE_LIMIT = 2, HPF_SLICE_STRIDE = 3 };

/* xla.HloInputOutputAliasProto and its AliasEntryProto (hlo.proto) */
enum { HPF_ALIAS_ENTRIES = 1 };
enum {
	HPF_ALIAS_OUTPUT_SHAPE_INDEX = 1,    /* repeated int64 */
	HPF_ALIAS_PARAMETER_NUMBER = 2,      /* int64 */
	HPF_ALIAS_PARAMETER_SHAPE_INDEX = 3, /* repeated int64 */
	HPF_ALIAS_KIND = 4,                  /* Kind */
};
/* xla.Kind (hlo.proto) */
enum { HPV_ALIAS_UNDEFINED = 0, HPV_ALIAS_MAY = 1, HPV_ALIAS_MUST = 2 };

/* xla.HloBufferDonorProto and its BufferDonorEntryProto (hlo.proto) */
enum { HPF_DONOR_ENTRIES = 1 };
enum { HPF_DONOR_PARAMETER_NUMBER = 1, HPF_DONOR_PARAMETER_SHAPE_INDEX = 2 };

/* xla.DeviceAssignmentProto (xla_data.proto): the module's replica and partition
 * counts (XLA's text shows them as replica_count= and num_partitions=) */
enum { HPF_DEVASSIGN_REPLICA_COUNT = 1, HPF_DEVASSIGN_COMPUTATION_COUNT = 2 };

/* xla.HloScheduleProto (hlo.proto): only its presence matters (is_scheduled) */
enum { HPF_SCHEDULE_SEQUENCES = 1 };

/* xla.CustomCallApiVersion (hlo.proto) */
enum {
	HPV_API_VERSION_UNSPECIFIED = 0,
	HPV_API_VERSION_ORIGINAL = 1,
	HPV_API_VERSION_STATUS_RETURNING = 2,
	HPV_API_VERSION_STATUS_RETURNING_UNIFIED = 3,
	HPV_API_VERSION_TYPED_FFI = 4,
};

/* xla.CustomCallSchedule (hlo.proto) */
enum { HPV_SCHEDULE_NONE = 0, HPV_SCHEDULE_LATEST = 1, HPV_SCHEDULE_EARLIEST = 2 };

/* xla.ShapeProto (xla_data.proto) */
enum {
	HPF_SHAPE_ELEMENT_TYPE = 2,         /* PrimitiveType */
	HPF_SHAPE_DIMENSIONS = 3,           /* repeated int64 */
	HPF_SHAPE_TUPLE_SHAPES = 4,         /* repeated ShapeProto */
	HPF_SHAPE_LAYOUT = 5,               /* LayoutProto */
	HPF_SHAPE_IS_DYNAMIC_DIMENSION = 6, /* repeated bool */
};

/* xla.LayoutProto (xla_data.proto) */
enum {
	HPF_LAYOUT_MINOR_TO_MAJOR = 1,         /* repeated int64 */
	HPF_LAYOUT_TILES = 6,                  /* repeated TileProto */
	HPF_LAYOUT_ELEMENT_SIZE_IN_BITS = 7,   /* int64 */
	HPF_LAYOUT_MEMORY_SPACE = 8,           /* int64 */
	HPF_LAYOUT_TAIL_PADDING_ALIGNMENT = 16,/* int64, 0 and 1 mean none */
};

/* xla.TileProto (xla_data.proto) */
enum { HPF_TILE_DIMENSIONS = 1 /* repeated int64; -1 combines dimensions ("*") */ };

/* xla.PrimitiveType (xla_data.proto) */
enum {
	HPV_TYPE_INVALID = 0,
	HPV_PRED = 1,
	HPV_S8 = 2,
	HPV_S16 = 3,
	HPV_S32 = 4,
	HPV_S64 = 5,
	HPV_U8 = 6,
	HPV_U16 = 7,
	HPV_U32 = 8,
	HPV_U64 = 9,
	HPV_F16 = 10,
	HPV_F32 = 11,
	HPV_F64 = 12,
	HPV_TUPLE = 13,
	HPV_OPAQUE_TYPE = 14,
	HPV_C64 = 15,
	HPV_BF16 = 16,
	HPV_TOKEN = 17,
	HPV_C128 = 18,
	HPV_F8E5M2 = 19,
	HPV_F8E4M3FN = 20,
	HPV_S4 = 21,
	HPV_U4 = 22,
	HPV_F8E4M3B11FNUZ = 23,
	HPV_F8E5M2FNUZ = 24,
	HPV_F8E4M3FNUZ = 25,
	HPV_S2 = 26,
	HPV_U2 = 27,
	HPV_F8E4M3 = 28,
	HPV_F8E3M4 = 29,
	HPV_S1 = 30, /* not in ncc: refused */
	HPV_U1 = 31, /* not in ncc: refused */
	HPV_F4E2M1FN = 32,
	HPV_F8E8M0FNU = 33,
	HPV_BUFFER = 34, /* not in ncc: refused */
};

/* xla.LiteralProto (xla_data.proto): the payload field of each element type */
enum {
	HPF_LIT_SHAPE = 1,
	HPF_LIT_PREDS = 2,           /* repeated bool */
	HPF_LIT_U8S = 3,             /* bytes */
	HPF_LIT_S32S = 4,            /* repeated int32 */
	HPF_LIT_S64S = 5,            /* repeated int64 */
	HPF_LIT_U32S = 6,            /* repeated uint32 */
	HPF_LIT_U64S = 7,            /* repeated uint64 */
	HPF_LIT_F32S = 8,            /* repeated float */
	HPF_LIT_F64S = 9,            /* repeated double */
	HPF_LIT_TUPLE_LITERALS = 10, /* repeated LiteralProto */
	HPF_LIT_F16S = 11,           /* bytes, little endian */
	HPF_LIT_C64S = 12,           /* repeated float, (re, im) interleaved */
	HPF_LIT_BF16S = 13,          /* bytes, little endian */
	HPF_LIT_S8S = 15,            /* bytes */
	HPF_LIT_U16S = 16,           /* bytes, little endian */
	HPF_LIT_S16S = 17,           /* bytes, little endian */
	HPF_LIT_C128S = 18,          /* repeated double, (re, im) interleaved */
	HPF_LIT_F8E5M2S = 19,        /* bytes */
	HPF_LIT_F8E4M3FNS = 20,
	HPF_LIT_S4S = 21,            /* bytes, one element per byte */
	HPF_LIT_U4S = 22,
	HPF_LIT_F8E4M3B11FNUZS = 23,
	HPF_LIT_F8E5M2FNUZS = 24,
	HPF_LIT_F8E4M3FNUZS = 25,
	HPF_LIT_S2S = 26,
	HPF_LIT_U2S = 27,
	HPF_LIT_F8E4M3S = 28,
	HPF_LIT_F8E3M4S = 29,
	HPF_LIT_F4E2M1FNS = 32,
	HPF_LIT_F8E8M0FNUS = 33,
};

/* xla.OpMetadata (xla_data.proto) */
enum {
	HPF_META_OP_TYPE = 1,
	HPF_META_OP_NAME = 2,
	HPF_META_SOURCE_FILE = 3,
	HPF_META_SOURCE_LINE = 4, /* int32 */
};

/* xla.FrontendAttributes (xla_data.proto): map<string,string>, i.e. repeated
 * entries {key = 1, value = 2} */
enum { HPF_FRONTEND_MAP = 1, HPF_MAP_KEY = 1, HPF_MAP_VALUE = 2 };

/* xla.Window and xla.WindowDimension (xla_data.proto) */
enum { HPF_WINDOW_DIMENSIONS = 1 };
enum {
	HPF_WDIM_SIZE = 1,
	HPF_WDIM_STRIDE = 2,
	HPF_WDIM_PADDING_LOW = 3,
	HPF_WDIM_PADDING_HIGH = 4,
	HPF_WDIM_WINDOW_DILATION = 5, /* rhs_dilate */
	HPF_WDIM_BASE_DILATION = 6,   /* lhs_dilate */
	HPF_WDIM_WINDOW_REVERSAL = 7, /* bool */
};

/* xla.ConvolutionDimensionNumbers (xla_data.proto) */
enum {
	HPF_CONV_KERNEL_INPUT_FEATURE = 3,
	HPF_CONV_KERNEL_OUTPUT_FEATURE = 4,
	HPF_CONV_KERNEL_SPATIAL = 6,  /* repeated */
	HPF_CONV_INPUT_BATCH = 7,
	HPF_CONV_INPUT_FEATURE = 8,
	HPF_CONV_OUTPUT_BATCH = 9,
	HPF_CONV_OUTPUT_FEATURE = 10,
	HPF_CONV_INPUT_SPATIAL = 11,  /* repeated */
	HPF_CONV_OUTPUT_SPATIAL = 12, /* repeated */
};

/* xla.DotDimensionNumbers (xla_data.proto) */
enum {
	HPF_DOT_LHS_CONTRACTING = 1,
	HPF_DOT_RHS_CONTRACTING = 2,
	HPF_DOT_LHS_BATCH = 3,
	HPF_DOT_RHS_BATCH = 4,
};

/* xla.GatherDimensionNumbers (xla_data.proto) */
enum {
	HPF_GATHER_OFFSET_DIMS = 1,
	HPF_GATHER_COLLAPSED_SLICE_DIMS = 2,
	HPF_GATHER_START_INDEX_MAP = 3,
	HPF_GATHER_INDEX_VECTOR_DIM = 4,
	HPF_GATHER_OPERAND_BATCHING_DIMS = 5,
	HPF_GATHER_START_INDICES_BATCHING_DIMS = 6,
};

/* xla.ScatterDimensionNumbers (xla_data.proto) */
enum {
	HPF_SCATTER_UPDATE_WINDOW_DIMS = 1,
	HPF_SCATTER_INSERTED_WINDOW_DIMS = 2,
	HPF_SCATTER_DIMS_TO_OPERAND_DIMS = 3,
	HPF_SCATTER_INDEX_VECTOR_DIM = 4,
	HPF_SCATTER_INPUT_BATCHING_DIMS = 5,
	HPF_SCATTER_INDICES_BATCHING_DIMS = 6,
};

/* xla.PaddingConfig and its PaddingConfigDimension (xla_data.proto) */
enum { HPF_PADDING_DIMENSIONS = 1 };
enum { HPF_PAD_EDGE_LOW = 1, HPF_PAD_EDGE_HIGH = 2, HPF_PAD_INTERIOR = 3 };

/* xla.PrecisionConfig (xla_data.proto) */
enum { HPF_PRECISION_OPERAND_PRECISION = 1, HPF_PRECISION_ALGORITHM = 2 };
/* xla.PrecisionConfig.Precision */
enum { HPV_PRECISION_DEFAULT = 0, HPV_PRECISION_HIGH = 1, HPV_PRECISION_HIGHEST = 2 };

/* xla.ReplicaGroup (xla_data.proto) */
enum { HPF_REPLICA_GROUP_IDS = 1 };
/* xla.CollectiveDeviceListProto (xla_data.proto) */
enum { HPF_DEVLIST_REPLICA_GROUPS = 1, HPF_DEVLIST_IOTA = 2 };
/* xla.IotaReplicaGroupListProto (xla_data.proto) */
enum {
	HPF_IOTA_NUM_GROUPS = 1,
	HPF_IOTA_DEVICES_PER_GROUP = 2,
	HPF_IOTA_RESHAPE_DIMS = 3,
	HPF_IOTA_TRANSPOSE_PERM = 4,
};

/* xla.SourceTarget (xla_data.proto) */
enum { HPF_PAIR_SOURCE = 1, HPF_PAIR_TARGET = 2 };

/* xla.RandomDistribution and xla.RandomAlgorithm (xla_data.proto) */
enum { HPV_RNG_INVALID = 0, HPV_RNG_UNIFORM = 1, HPV_RNG_NORMAL = 2 };
enum { HPV_RNG_DEFAULT = 0, HPV_RNG_THREE_FRY = 1, HPV_RNG_PHILOX = 2 };

/* xla.FftType (xla_data.proto): FFT = 0, IFFT = 1, RFFT = 2, IRFFT = 3 */

/* xla.TriangularSolveOptions (xla_data.proto); transpose_a: 1 NO_TRANSPOSE,
 * 2 TRANSPOSE, 3 ADJOINT */
enum {
	HPF_TRSM_LEFT_SIDE = 1,
	HPF_TRSM_LOWER = 2,
	HPF_TRSM_UNIT_DIAGONAL = 3,
	HPF_TRSM_TRANSPOSE_A = 4,
};

/* xla.CholeskyOptions (xla_data.proto) */
enum { HPF_CHOLESKY_LOWER = 1 };

/* xla.ParameterReplication (xla_data.proto) */
enum { HPF_PARAM_REPLICATION_LEAVES = 1 /* repeated bool */ };

/* xla.OutputOperandAliasing (xla_data.proto) */
enum {
	HPF_OOA_OUTPUT_SHAPE_INDEX = 1,
	HPF_OOA_OPERAND_INDEX = 2,
	HPF_OOA_OPERAND_SHAPE_INDEX = 3,
};

/* xla.OpSharding (xla_data.proto) */
enum {
	HPF_SHARDING_TYPE = 1,
	HPF_SHARDING_TILE_ASSIGNMENT_DIMS = 3,
	HPF_SHARDING_TILE_ASSIGNMENT_DEVICES = 4,
	HPF_SHARDING_TUPLE_SHARDINGS = 5,
	HPF_SHARDING_REPLICATE_ON_LAST_TILE_DIM = 6,
	HPF_SHARDING_LAST_TILE_DIMS = 8,
	HPF_SHARDING_IOTA_RESHAPE_DIMS = 9,
	HPF_SHARDING_IOTA_TRANSPOSE_PERM = 10,
};
/* xla.OpSharding.Type */
enum {
	HPV_SHARDING_REPLICATED = 0,
	HPV_SHARDING_MAXIMAL = 1,
	HPV_SHARDING_TUPLE = 2,
	HPV_SHARDING_OTHER = 3,
	HPV_SHARDING_MANUAL = 4,
	HPV_SHARDING_UNKNOWN = 5,
	HPV_SHARDING_UNREDUCED = 6,
};

#endif /* NCC_HLO_PROTO_FIELDS_H */
