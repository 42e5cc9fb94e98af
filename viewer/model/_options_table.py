"""Options table layouts derived from ai_edge_litert.schema_py_generated.

Written by ``python -m viewer.model._options``; do not edit. Checked against the
installed schema by tests/model/test_reader_options.py.
"""

LAYOUTS = {
    'ATan2Options': (
    ),
    'AbsOptions': (
    ),
    'AddNOptions': (
    ),
    'AddOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
        ('pot_scale_int16', 6, 'scalar', '<?', 1, True),
    ),
    'ArgMaxOptions': (
        ('output_type', 4, 'scalar', '<b', 1, 0),
    ),
    'ArgMinOptions': (
        ('output_type', 4, 'scalar', '<b', 1, 0),
    ),
    'AssignVariableOptions': (
    ),
    'BatchMatMulOptions': (
        ('adj_x', 4, 'scalar', '<?', 1, False),
        ('adj_y', 6, 'scalar', '<?', 1, False),
        ('asymmetric_quantize_inputs', 8, 'scalar', '<?', 1, False),
    ),
    'BatchToSpaceNDOptions': (
    ),
    'BidirectionalSequenceLSTMOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
        ('cell_clip', 6, 'scalar', '<f', 4, 0.0),
        ('proj_clip', 8, 'scalar', '<f', 4, 0.0),
        ('merge_outputs', 10, 'scalar', '<?', 1, False),
        ('time_major', 12, 'scalar', '<?', 1, True),
        ('asymmetric_quantize_inputs', 14, 'scalar', '<?', 1, False),
    ),
    'BidirectionalSequenceRNNOptions': (
        ('time_major', 4, 'scalar', '<?', 1, False),
        ('fused_activation_function', 6, 'scalar', '<b', 1, 0),
        ('merge_outputs', 8, 'scalar', '<?', 1, False),
        ('asymmetric_quantize_inputs', 10, 'scalar', '<?', 1, False),
    ),
    'BitcastOptions': (
    ),
    'BitwiseXorOptions': (
    ),
    'BroadcastToOptions': (
    ),
    'BucketizeOptions': (
        ('boundaries', 4, 'vector', '<f', 4, None),
    ),
    'CallOnceOptions': (
        ('init_subgraph_index', 4, 'scalar', '<i', 4, 0),
    ),
    'CallOptions': (
        ('subgraph', 4, 'scalar', '<I', 4, 0),
    ),
    'CastOptions': (
        ('in_data_type', 4, 'scalar', '<b', 1, 0),
        ('out_data_type', 6, 'scalar', '<b', 1, 0),
    ),
    'ConcatEmbeddingsOptions': (
        ('num_channels', 4, 'scalar', '<i', 4, 0),
        ('num_columns_per_channel', 6, 'vector', '<i', 4, None),
        ('embedding_dim_per_channel', 8, 'vector', '<i', 4, None),
    ),
    'ConcatenationOptions': (
        ('axis', 4, 'scalar', '<i', 4, 0),
        ('fused_activation_function', 6, 'scalar', '<b', 1, 0),
    ),
    'Conv2DOptions': (
        ('padding', 4, 'scalar', '<b', 1, 0),
        ('stride_w', 6, 'scalar', '<i', 4, 0),
        ('stride_h', 8, 'scalar', '<i', 4, 0),
        ('fused_activation_function', 10, 'scalar', '<b', 1, 0),
        ('dilation_wfactor', 12, 'scalar', '<i', 4, 1),
        ('dilation_hfactor', 14, 'scalar', '<i', 4, 1),
        ('quantized_bias_type', 16, 'scalar', '<b', 1, 0),
    ),
    'Conv3DOptions': (
        ('padding', 4, 'scalar', '<b', 1, 0),
        ('stride_d', 6, 'scalar', '<i', 4, 0),
        ('stride_w', 8, 'scalar', '<i', 4, 0),
        ('stride_h', 10, 'scalar', '<i', 4, 0),
        ('fused_activation_function', 12, 'scalar', '<b', 1, 0),
        ('dilation_dfactor', 14, 'scalar', '<i', 4, 1),
        ('dilation_wfactor', 16, 'scalar', '<i', 4, 1),
        ('dilation_hfactor', 18, 'scalar', '<i', 4, 1),
    ),
    'CosOptions': (
    ),
    'CumsumOptions': (
        ('exclusive', 4, 'scalar', '<?', 1, False),
        ('reverse', 6, 'scalar', '<?', 1, False),
    ),
    'DensifyOptions': (
    ),
    'DepthToSpaceOptions': (
        ('block_size', 4, 'scalar', '<i', 4, 0),
    ),
    'DepthwiseConv2DOptions': (
        ('padding', 4, 'scalar', '<b', 1, 0),
        ('stride_w', 6, 'scalar', '<i', 4, 0),
        ('stride_h', 8, 'scalar', '<i', 4, 0),
        ('depth_multiplier', 10, 'scalar', '<i', 4, 0),
        ('fused_activation_function', 12, 'scalar', '<b', 1, 0),
        ('dilation_wfactor', 14, 'scalar', '<i', 4, 1),
        ('dilation_hfactor', 16, 'scalar', '<i', 4, 1),
    ),
    'DequantizeOptions': (
    ),
    'DilateOptions': (
    ),
    'DivOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
    ),
    'DynamicUpdateSliceOptions': (
    ),
    'EmbeddingLookupSparseOptions': (
        ('combiner', 4, 'scalar', '<b', 1, 0),
    ),
    'EqualOptions': (
    ),
    'ExpOptions': (
    ),
    'ExpandDimsOptions': (
    ),
    'FakeQuantOptions': (
        ('min', 4, 'scalar', '<f', 4, 0.0),
        ('max', 6, 'scalar', '<f', 4, 0.0),
        ('num_bits', 8, 'scalar', '<i', 4, 0),
        ('narrow_range', 10, 'scalar', '<?', 1, False),
    ),
    'FillOptions': (
    ),
    'FloorDivOptions': (
    ),
    'FloorModOptions': (
    ),
    'FullyConnectedOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
        ('weights_format', 6, 'scalar', '<b', 1, 0),
        ('keep_num_dims', 8, 'scalar', '<?', 1, False),
        ('asymmetric_quantize_inputs', 10, 'scalar', '<?', 1, False),
        ('quantized_bias_type', 12, 'scalar', '<b', 1, 0),
        ('quant_spec', 14, 'vector', '<B', 1, None),
    ),
    'GatherNdOptions': (
    ),
    'GatherOptions': (
        ('axis', 4, 'scalar', '<i', 4, 0),
        ('batch_dims', 6, 'scalar', '<i', 4, 0),
    ),
    'GeluOptions': (
        ('approximate', 4, 'scalar', '<?', 1, False),
    ),
    'GreaterEqualOptions': (
    ),
    'GreaterOptions': (
    ),
    'HardSwishOptions': (
    ),
    'HashtableFindOptions': (
    ),
    'HashtableImportOptions': (
    ),
    'HashtableOptions': (
        ('table_id', 4, 'scalar', '<i', 4, 0),
        ('key_dtype', 6, 'scalar', '<b', 1, 0),
        ('value_dtype', 8, 'scalar', '<b', 1, 0),
    ),
    'HashtableSizeOptions': (
    ),
    'IfOptions': (
        ('then_subgraph_index', 4, 'scalar', '<i', 4, 0),
        ('else_subgraph_index', 6, 'scalar', '<i', 4, 0),
    ),
    'L2NormOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
    ),
    'LSHProjectionOptions': (
        ('type', 4, 'scalar', '<b', 1, 0),
    ),
    'LSTMOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
        ('cell_clip', 6, 'scalar', '<f', 4, 0.0),
        ('proj_clip', 8, 'scalar', '<f', 4, 0.0),
        ('kernel_type', 10, 'scalar', '<b', 1, 0),
        ('asymmetric_quantize_inputs', 12, 'scalar', '<?', 1, False),
    ),
    'LeakyReluOptions': (
        ('alpha', 4, 'scalar', '<f', 4, 0.0),
    ),
    'LessEqualOptions': (
    ),
    'LessOptions': (
    ),
    'LocalResponseNormalizationOptions': (
        ('radius', 4, 'scalar', '<i', 4, 0),
        ('bias', 6, 'scalar', '<f', 4, 0.0),
        ('alpha', 8, 'scalar', '<f', 4, 0.0),
        ('beta', 10, 'scalar', '<f', 4, 0.0),
    ),
    'LogSoftmaxOptions': (
    ),
    'LogicalAndOptions': (
    ),
    'LogicalNotOptions': (
    ),
    'LogicalOrOptions': (
    ),
    'MatrixDiagOptions': (
    ),
    'MatrixSetDiagOptions': (
    ),
    'MaximumMinimumOptions': (
    ),
    'MirrorPadOptions': (
        ('mode', 4, 'scalar', '<b', 1, 0),
    ),
    'MulOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
    ),
    'NegOptions': (
    ),
    'NonMaxSuppressionV4Options': (
    ),
    'NonMaxSuppressionV5Options': (
    ),
    'NotEqualOptions': (
    ),
    'OneHotOptions': (
        ('axis', 4, 'scalar', '<i', 4, 0),
    ),
    'PackOptions': (
        ('values_count', 4, 'scalar', '<i', 4, 0),
        ('axis', 6, 'scalar', '<i', 4, 0),
    ),
    'PadOptions': (
    ),
    'PadV2Options': (
    ),
    'Pool2DOptions': (
        ('padding', 4, 'scalar', '<b', 1, 0),
        ('stride_w', 6, 'scalar', '<i', 4, 0),
        ('stride_h', 8, 'scalar', '<i', 4, 0),
        ('filter_width', 10, 'scalar', '<i', 4, 0),
        ('filter_height', 12, 'scalar', '<i', 4, 0),
        ('fused_activation_function', 14, 'scalar', '<b', 1, 0),
    ),
    'PowOptions': (
    ),
    'QuantizeOptions': (
    ),
    'RNNOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
        ('asymmetric_quantize_inputs', 6, 'scalar', '<?', 1, False),
    ),
    'RandomOptions': (
        ('seed', 4, 'scalar', '<q', 8, 0),
        ('seed2', 6, 'scalar', '<q', 8, 0),
    ),
    'RangeOptions': (
    ),
    'RankOptions': (
    ),
    'ReadVariableOptions': (
    ),
    'ReduceWindowOptions': (
        ('reduce_function', 4, 'scalar', '<i', 4, 0),
    ),
    'ReducerOptions': (
        ('keep_dims', 4, 'scalar', '<?', 1, False),
    ),
    'ReshapeOptions': (
        ('new_shape', 4, 'vector', '<i', 4, None),
    ),
    'ResizeBilinearOptions': (
        ('align_corners', 8, 'scalar', '<?', 1, False),
        ('half_pixel_centers', 10, 'scalar', '<?', 1, False),
    ),
    'ResizeNearestNeighborOptions': (
        ('align_corners', 4, 'scalar', '<?', 1, False),
        ('half_pixel_centers', 6, 'scalar', '<?', 1, False),
    ),
    'ReverseSequenceOptions': (
        ('seq_dim', 4, 'scalar', '<i', 4, 0),
        ('batch_dim', 6, 'scalar', '<i', 4, 0),
    ),
    'ReverseV2Options': (
    ),
    'Rfft2dOptions': (
    ),
    'RightShiftOptions': (
    ),
    'SVDFOptions': (
        ('rank', 4, 'scalar', '<i', 4, 0),
        ('fused_activation_function', 6, 'scalar', '<b', 1, 0),
        ('asymmetric_quantize_inputs', 8, 'scalar', '<?', 1, False),
    ),
    'ScatterNdOptions': (
    ),
    'SegmentSumOptions': (
    ),
    'SelectOptions': (
    ),
    'SelectV2Options': (
    ),
    'SequenceRNNOptions': (
        ('time_major', 4, 'scalar', '<?', 1, False),
        ('fused_activation_function', 6, 'scalar', '<b', 1, 0),
        ('asymmetric_quantize_inputs', 8, 'scalar', '<?', 1, False),
    ),
    'ShapeOptions': (
        ('out_type', 4, 'scalar', '<b', 1, 0),
    ),
    'SignOptions': (
    ),
    'SkipGramOptions': (
        ('ngram_size', 4, 'scalar', '<i', 4, 0),
        ('max_skip_size', 6, 'scalar', '<i', 4, 0),
        ('include_all_ngrams', 8, 'scalar', '<?', 1, False),
    ),
    'SliceOptions': (
    ),
    'SoftmaxOptions': (
        ('beta', 4, 'scalar', '<f', 4, 0.0),
    ),
    'SpaceToBatchNDOptions': (
    ),
    'SpaceToDepthOptions': (
        ('block_size', 4, 'scalar', '<i', 4, 0),
    ),
    'SparseToDenseOptions': (
        ('validate_indices', 4, 'scalar', '<?', 1, False),
    ),
    'SplitOptions': (
        ('num_splits', 4, 'scalar', '<i', 4, 0),
    ),
    'SplitVOptions': (
        ('num_splits', 4, 'scalar', '<i', 4, 0),
    ),
    'SquareOptions': (
    ),
    'SquaredDifferenceOptions': (
    ),
    'SqueezeOptions': (
        ('squeeze_dims', 4, 'vector', '<i', 4, None),
    ),
    'StableHLOCompositeOptions': (
        ('name', 4, 'string', '', 0, None),
        ('decomposition_subgraph_index', 6, 'scalar', '<i', 4, 0),
        ('composite_attributes', 8, 'vector', '<B', 1, None),
        ('composite_attributes_format', 10, 'scalar', '<b', 1, 0),
        ('version', 12, 'scalar', '<i', 4, 0),
    ),
    'StablehloBroadcastInDimOptions': (
        ('broadcast_dimensions', 4, 'vector', '<q', 8, None),
    ),
    'StablehloCaseOptions': (
        ('branch_subgraph_indices', 4, 'vector', '<i', 4, None),
    ),
    'StablehloCompareOptions': (
        ('comparison_direction', 4, 'scalar', '<I', 4, 0),
        ('compare_type', 6, 'scalar', '<I', 4, 0),
    ),
    'StablehloConcatenateOptions': (
        ('dimension', 4, 'scalar', '<q', 8, 0),
    ),
    'StablehloConvolutionOptions': (
        ('window_strides', 4, 'vector', '<q', 8, None),
        ('padding', 6, 'vector', '<q', 8, None),
        ('lhs_dilation', 8, 'vector', '<q', 8, None),
        ('rhs_dilation', 10, 'vector', '<q', 8, None),
        ('window_reversal', 12, 'vector', '<?', 1, None),
        ('input_batch_dimension', 14, 'scalar', '<q', 8, 0),
        ('input_feature_dimension', 16, 'scalar', '<q', 8, 0),
        ('input_spatial_dimensions', 18, 'vector', '<q', 8, None),
        ('kernel_input_feature_dimension', 20, 'scalar', '<q', 8, 0),
        ('kernel_output_feature_dimension', 22, 'scalar', '<q', 8, 0),
        ('kernel_spatial_dimensions', 24, 'vector', '<q', 8, None),
        ('output_batch_dimension', 26, 'scalar', '<q', 8, 0),
        ('output_feature_dimension', 28, 'scalar', '<q', 8, 0),
        ('output_spatial_dimensions', 30, 'vector', '<q', 8, None),
        ('feature_group_count', 32, 'scalar', '<q', 8, 0),
        ('batch_group_count', 34, 'scalar', '<q', 8, 0),
        ('precision_config', 36, 'vector', '<I', 4, None),
    ),
    'StablehloCustomCallOptions': (
        ('call_target_name', 4, 'string', '', 0, None),
        ('has_side_effect', 6, 'scalar', '<?', 1, False),
        ('backend_config', 8, 'string', '', 0, None),
        ('api_version', 10, 'scalar', '<i', 4, 0),
        ('called_computations', 12, 'vector', '<i', 4, None),
        ('custom_attributes', 14, 'vector', '<B', 1, None),
    ),
    'StablehloDotGeneralOptions': (
        ('lhs_batching_dimensions', 4, 'vector', '<q', 8, None),
        ('rhs_batching_dimensions', 6, 'vector', '<q', 8, None),
        ('lhs_contracting_dimensions', 8, 'vector', '<q', 8, None),
        ('rhs_contracting_dimensions', 10, 'vector', '<q', 8, None),
        ('precision_config', 12, 'vector', '<I', 4, None),
    ),
    'StablehloDynamicSliceOptions': (
        ('slice_sizes', 4, 'vector', '<q', 8, None),
    ),
    'StablehloGatherOptions': (
        ('offset_dims', 4, 'vector', '<q', 8, None),
        ('collapsed_slice_dims', 6, 'vector', '<q', 8, None),
        ('start_index_map', 8, 'vector', '<q', 8, None),
        ('index_vector_dim', 10, 'scalar', '<q', 8, 0),
        ('slice_sizes', 12, 'vector', '<q', 8, None),
        ('indices_are_sorted', 14, 'scalar', '<?', 1, False),
    ),
    'StablehloIotaOptions': (
        ('iota_dimension', 4, 'scalar', '<q', 8, 0),
    ),
    'StablehloPadOptions': (
        ('edge_padding_low', 4, 'vector', '<q', 8, None),
        ('edge_padding_high', 6, 'vector', '<q', 8, None),
        ('interior_padding', 8, 'vector', '<q', 8, None),
    ),
    'StablehloReduceOptions': (
        ('dimensions', 4, 'vector', '<q', 8, None),
        ('body_subgraph_index', 6, 'scalar', '<i', 4, 0),
    ),
    'StablehloReduceWindowOptions': (
        ('window_dimensions', 4, 'vector', '<q', 8, None),
        ('window_strides', 6, 'vector', '<q', 8, None),
        ('base_dilations', 8, 'vector', '<q', 8, None),
        ('window_dilations', 10, 'vector', '<q', 8, None),
        ('padding', 12, 'vector', '<q', 8, None),
        ('body_subgraph_index', 14, 'scalar', '<i', 4, 0),
    ),
    'StablehloRngBitGeneratorOptions': (
        ('algorithm', 4, 'scalar', '<b', 1, 0),
    ),
    'StablehloScatterOptions': (
        ('indices_are_sorted', 4, 'scalar', '<?', 1, False),
        ('update_window_dims', 6, 'vector', '<q', 8, None),
        ('inserted_window_dims', 8, 'vector', '<q', 8, None),
        ('scatter_dims_to_operand_dims', 10, 'vector', '<q', 8, None),
        ('index_vector_dim', 12, 'scalar', '<q', 8, 0),
        ('unique_indices', 14, 'scalar', '<?', 1, False),
        ('update_computation_subgraph_index', 16, 'scalar', '<i', 4, 0),
    ),
    'StablehloShiftLeftOptions': (
    ),
    'StablehloSliceOptions': (
        ('start_indices', 4, 'vector', '<q', 8, None),
        ('limit_indices', 6, 'vector', '<q', 8, None),
        ('strides', 8, 'vector', '<q', 8, None),
    ),
    'StablehloSortOptions': (
        ('dimension', 4, 'scalar', '<q', 8, 0),
        ('is_stable', 6, 'scalar', '<?', 1, False),
        ('comparator_subgraph_index', 8, 'scalar', '<i', 4, 0),
    ),
    'StablehloTransposeOptions': (
        ('permutation', 4, 'vector', '<q', 8, None),
    ),
    'StablehloWhileOptions': (
        ('cond_subgraph_index', 4, 'scalar', '<i', 4, 0),
        ('body_subgraph_index', 6, 'scalar', '<i', 4, 0),
    ),
    'StridedSliceOptions': (
        ('begin_mask', 4, 'scalar', '<i', 4, 0),
        ('end_mask', 6, 'scalar', '<i', 4, 0),
        ('ellipsis_mask', 8, 'scalar', '<i', 4, 0),
        ('new_axis_mask', 10, 'scalar', '<i', 4, 0),
        ('shrink_axis_mask', 12, 'scalar', '<i', 4, 0),
        ('offset', 14, 'scalar', '<?', 1, False),
    ),
    'SubOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
        ('pot_scale_int16', 6, 'scalar', '<?', 1, True),
    ),
    'TileOptions': (
    ),
    'TopKV2Options': (
    ),
    'TransposeConvOptions': (
        ('padding', 4, 'scalar', '<b', 1, 0),
        ('stride_w', 6, 'scalar', '<i', 4, 0),
        ('stride_h', 8, 'scalar', '<i', 4, 0),
        ('fused_activation_function', 10, 'scalar', '<b', 1, 0),
        ('quantized_bias_type', 12, 'scalar', '<b', 1, 0),
    ),
    'TransposeOptions': (
    ),
    'UnidirectionalSequenceLSTMOptions': (
        ('fused_activation_function', 4, 'scalar', '<b', 1, 0),
        ('cell_clip', 6, 'scalar', '<f', 4, 0.0),
        ('proj_clip', 8, 'scalar', '<f', 4, 0.0),
        ('time_major', 10, 'scalar', '<?', 1, False),
        ('asymmetric_quantize_inputs', 12, 'scalar', '<?', 1, False),
        ('diagonal_recurrent_tensors', 14, 'scalar', '<?', 1, False),
    ),
    'UniqueOptions': (
        ('idx_out_type', 4, 'scalar', '<b', 1, 2),
    ),
    'UnpackOptions': (
        ('num', 4, 'scalar', '<i', 4, 0),
        ('axis', 6, 'scalar', '<i', 4, 0),
    ),
    'UnsortedSegmentMaxOptions': (
    ),
    'UnsortedSegmentMinOptions': (
    ),
    'UnsortedSegmentProdOptions': (
    ),
    'UnsortedSegmentSumOptions': (
    ),
    'VarHandleOptions': (
        ('container', 4, 'string', '', 0, None),
        ('shared_name', 6, 'string', '', 0, None),
    ),
    'WhereOptions': (
    ),
    'WhileOptions': (
        ('cond_subgraph_index', 4, 'scalar', '<i', 4, 0),
        ('body_subgraph_index', 6, 'scalar', '<i', 4, 0),
    ),
    'ZerosLikeOptions': (
    ),
}
