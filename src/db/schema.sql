-- The profile database's DDL: the one source. DB_SPEC.md "Exact DDL" verbatim (the format's tables,
-- indexes and fixed rows), msprof's enum rows, and gpuprof's own GPUPROF_* tables
-- (docs/db_gpuprof_tables.md).
--
-- Read by: the writer (src/db/schema.cc, embedded at build time through src/db/schema_sql.*), the
-- checker (src/db/check.cc: the expected tables, columns, indexes and enum rows), the read-side test
-- fixture (tests/unit/db/fixture_db.cc), the schema test (tests/unit/db/writer_schema_test.cc) and
-- the Python benchmark peer (bench/db_writer_peer.py, from the source tree). Nobody copies it.
--
-- Layout: each part starts with a line "-- [part]"; the readers split the file there. Statements end
-- with ';' at the end of a line, and no string literal holds ';'.
--
-- Names, column order and declared types are part of the format; tools read columns by name and
-- Insight adds columns and uses ROWID, so: ordinary rowid tables, no foreign keys, no WITHOUT ROWID.

-- [format-tables]
-- Created in every profile (DB_SPEC.md "Exact DDL").
-- shared / metadata (msprof_db.cpp)
CREATE TABLE IF NOT EXISTS STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS META_DATA (name TEXT, value TEXT);
CREATE TABLE IF NOT EXISTS SESSION_TIME_INFO (startTimeNs INTEGER, endTimeNs INTEGER);
CREATE TABLE IF NOT EXISTS NPU_INFO (id INTEGER, name TEXT);
CREATE TABLE IF NOT EXISTS RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS HOST_INFO (hostUid TEXT, hostName TEXT);

-- enums (msprof ENUM_TABLE_COLS)
CREATE TABLE IF NOT EXISTS ENUM_API_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_MSTX_EVENT_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_MEMCPY_OPERATION (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_DATA_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_LINK_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_TRANSPORT_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_RDMA_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_MODULE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_OVERLAP_ANALYSIS_TYPE (id INTEGER PRIMARY KEY, name TEXT);

-- device side (msprof_db.cpp)
CREATE TABLE IF NOT EXISTS CANN_API (startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, connectionId INTEGER PRIMARY KEY, name INTEGER);
CREATE TABLE IF NOT EXISTS TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER);
CREATE TABLE IF NOT EXISTS COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockNum INTEGER, mixBlockNum INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, hf32Eligible INTEGER, gridDim INTEGER, blockDim INTEGER);
CREATE TABLE IF NOT EXISTS COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER, deviceId INTEGER, rankSize INTEGER);
CREATE TABLE IF NOT EXISTS COMMUNICATION_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER, groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER, dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, linkType INTEGER, opId INTEGER, isMaster INTEGER, bandwidth NUMERIC);
CREATE TABLE IF NOT EXISTS MSTX_EVENTS (startNs INTEGER, endNs INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER, message INTEGER, globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, connectionId INTEGER);
CREATE TABLE IF NOT EXISTS MEMCPY_INFO (globalTaskId NUMERIC, size NUMERIC, memcpyOperation NUMERIC);

-- framework side (torch_npu TableColumnsManager column order; startNs/endNs INTEGER as the seed documents)
CREATE TABLE IF NOT EXISTS PYTORCH_API (startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, type INTEGER);
CREATE TABLE IF NOT EXISTS CONNECTION_IDS (id INTEGER, connectionId INTEGER);
CREATE TABLE IF NOT EXISTS PYTORCH_CALLCHAINS (id INTEGER, stack INTEGER, stackDepth INTEGER);
CREATE TABLE IF NOT EXISTS MEMORY_RECORD (component INTEGER, timestamp INTEGER, totalAllocated INTEGER, totalReserved INTEGER, totalActive INTEGER, streamPtr INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS OP_MEMORY (name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, activeReleaseTime INTEGER, duration INTEGER, activeDuration INTEGER, allocationTotalAllocated INTEGER, allocationTotalReserved INTEGER, allocationTotalActive INTEGER, releaseTotalAllocated INTEGER, releaseTotalReserved INTEGER, releaseTotalActive INTEGER, streamPtr INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER);
CREATE TABLE IF NOT EXISTS GC_RECORD (startNs INTEGER, endNs INTEGER, globalTid INTEGER);

-- [optional-tables]
-- DB_SPEC.md's optional device tables (only if collected; exact columns in msprof_db.cpp). gpuprof
-- collects none: the writer does not create them, check compares them when a file has them.
CREATE TABLE IF NOT EXISTS NPU_MEM (type INTEGER, ddr NUMERIC, hbm NUMERIC, timestampNs INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC);
CREATE TABLE IF NOT EXISTS AICORE_FREQ (deviceId INTEGER, timestampNs NUMERIC, freq INTEGER, dieId NUMERIC);
CREATE TABLE IF NOT EXISTS OSRT_API (name NUMERIC, globalTid NUMERIC, startNs NUMERIC, endNs NUMERIC);
CREATE TABLE IF NOT EXISTS OVERLAP_ANALYSIS (id INTEGER PRIMARY KEY, deviceId INTEGER, startNs NUMERIC, endNs NUMERIC, type INTEGER);

-- [gpuprof-tables]
-- gpuprof's own tables (docs/db_gpuprof_tables.md), created in every profile.
CREATE TABLE IF NOT EXISTS GPUPROF_REPLAY_KERNEL (id INTEGER PRIMARY KEY, timestampNs INTEGER, globalTid INTEGER, deviceId INTEGER, name INTEGER, connectionId INTEGER, launchIndex INTEGER, replayed INTEGER, declineReason TEXT, declineDetail TEXT, restoreMode TEXT, passes INTEGER, deterministic INTEGER, snapshotRegions INTEGER, snapshotBytes INTEGER, snapshotNs INTEGER, untrackedWritableBytes INTEGER, snapshotDeviceBytes INTEGER, replayNs INTEGER, counterPasses INTEGER, counterStatus TEXT, clockControl TEXT, cacheControl TEXT, replayMode TEXT, graphId INTEGER, graphNodeId INTEGER, graphFallback TEXT, rangeId INTEGER, rangeLaunch INTEGER);
CREATE TABLE IF NOT EXISTS GPUPROF_REPLAY_PASS (kernelId INTEGER, pass INTEGER, startNs INTEGER, durationNs INTEGER, smClockBeforeKhz INTEGER, smClockAfterKhz INTEGER, bytesRestored INTEGER, regionsRestored INTEGER, dirtyChunks INTEGER, outputHash INTEGER, matchesPass1 INTEGER);
CREATE TABLE IF NOT EXISTS GPUPROF_REPLAY_METRIC (kernelId INTEGER, name INTEGER, unit INTEGER, value REAL, passes INTEGER);
CREATE TABLE IF NOT EXISTS GPUPROF_COPY_MEMORY (globalTaskId INTEGER, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE IF NOT EXISTS GPUPROF_REPLAY_GRAPH_NODE (kernelId INTEGER, pass INTEGER, graphNodeId INTEGER, name INTEGER, durationNs INTEGER);

-- [format-indexes]
-- DB_SPEC.md's indexes. The writer creates them before the rows, not after (schema.h says why).
CREATE INDEX IF NOT EXISTS TaskIndex ON TASK (startNs, globalTaskId);
CREATE INDEX IF NOT EXISTS CommunicationTaskIndex ON COMMUNICATION_TASK_INFO (globalTaskId);

-- [gpuprof-indexes]
CREATE INDEX IF NOT EXISTS GpuprofReplayPassIndex ON GPUPROF_REPLAY_PASS (kernelId, pass);
CREATE INDEX IF NOT EXISTS GpuprofReplayMetricIndex ON GPUPROF_REPLAY_METRIC (kernelId);
CREATE INDEX IF NOT EXISTS GpuprofReplayGraphNodeIndex ON GPUPROF_REPLAY_GRAPH_NODE (kernelId, pass);

-- [spec-rows]
-- DB_SPEC.md's fixed rows, verbatim: check compares these tables' rows exactly.
INSERT INTO ENUM_API_TYPE VALUES (20000,'acl'),(15000,'model'),(10000,'node'),(5500,'communication'),(5000,'runtime'),
                                 (50001,'op'),(50002,'queue'),(50003,'trace'),(50004,'mstx');
INSERT INTO ENUM_MSTX_EVENT_TYPE VALUES (0,'marker'),(1,'push/pop'),(2,'start/end'),(3,'marker_ex');
INSERT INTO ENUM_MEMCPY_OPERATION VALUES (0,'host to host'),(1,'host to device'),(2,'device to host'),(3,'device to device'),
  (4,'managed memory'),(5,'addr device to device'),(6,'host to device ex'),(7,'device to host ex'),(65535,'other');
INSERT INTO ENUM_OVERLAP_ANALYSIS_TYPE VALUES (0,'COMPUTE'),(1,'COMMUNICATION'),(2,'COMM_NOT_OVERLAP_COMP'),(3,'FREE'),(65535,'RESERVE');
INSERT INTO META_DATA VALUES ('SCHEMA_VERSION','1.2.0'),('SCHEMA_VERSION_MAJOR','1'),('SCHEMA_VERSION_MINOR','2'),('SCHEMA_VERSION_MICRO','0');

-- [msprof-rows]
-- The id/name pairs msprof writes into the other enum tables (MSPROF:analysis/csrc/application/
-- database/db_constant.h: HCCL_DATA_TYPE_TABLE, HCCL_LINK_TYPE_TABLE, HCCL_TRANSPORT_TYPE_TABLE,
-- HCCL_RDMA_TYPE_TABLE, MODULE_NAME_TABLE). 65534 is msprof's "N/A" (UINT16_MAX - 1) and 65535 its
-- INVALID_TYPE. They are data of msprof's version: check only requires these tables non-empty.
INSERT INTO ENUM_HCCL_DATA_TYPE VALUES (0,'INT8'),(1,'INT16'),(2,'INT32'),(3,'FP16'),(4,'FP32'),(5,'INT64'),
  (6,'UINT64'),(7,'UINT8'),(8,'UINT16'),(9,'UINT32'),(10,'FP64'),(11,'BFP16'),
  (12,'INT128'),(14,'HIF8'),(15,'FP8E4M3'),(16,'FP8E5M2'),(17,'FP8E8M0'),(255,'RESERVED'),
  (65534,'N/A'),(65535,'INVALID_TYPE');
INSERT INTO ENUM_HCCL_LINK_TYPE VALUES (0,'ON_CHIP'),(1,'HCCS'),(2,'PCIE'),(3,'ROCE'),(4,'SIO'),(5,'HCCS_SW'),
  (6,'STANDARD_ROCE'),(7,'UB'),(8,'UBoE'),(255,'RESERVED'),(65534,'N/A'),(65535,'INVALID_TYPE');
INSERT INTO ENUM_HCCL_TRANSPORT_TYPE VALUES (0,'SDMA'),(1,'RDMA'),(2,'LOCAL'),(3,'UB'),(4,'ROCE'),(255,'RESERVED'),
  (65534,'N/A'),(65535,'INVALID_TYPE');
INSERT INTO ENUM_HCCL_RDMA_TYPE VALUES (0,'RDMA_SEND_NOTIFY'),(1,'RDMA_SEND_PAYLOAD'),(255,'RESERVED'),(65534,'N/A'),(65535,'INVALID_TYPE');
INSERT INTO ENUM_MODULE VALUES (0,'SLOG'),(1,'IDEDD'),(2,'SCC'),(3,'HCCL'),(4,'FMK'),(5,'CCU'),
  (6,'DVPP'),(7,'RUNTIME'),(8,'CCE'),(9,'HDC'),(10,'DRV'),(11,'NET'),
  (22,'DEVMM'),(23,'KERNEL'),(24,'LIBMEDIA'),(25,'CCECPU'),(27,'ROS'),(28,'HCCP'),
  (29,'ROCE'),(30,'TEFUSION'),(31,'PROFILING'),(32,'DP'),(33,'APP'),(34,'TS'),
  (35,'TSDUMP'),(36,'AICPU'),(37,'LP'),(38,'TDT'),(39,'FE'),(40,'MD'),
  (41,'MB'),(42,'ME'),(43,'IMU'),(44,'IMP'),(45,'GE'),(47,'CAMERA'),
  (48,'ASCENDCL'),(49,'TEEOS'),(50,'ISP'),(51,'SIS'),(52,'HSM'),(53,'DSS'),
  (54,'PROCMGR'),(55,'BBOX'),(56,'AIVECTOR'),(57,'TBE'),(58,'FV'),(60,'TUNE'),
  (61,'HSS'),(62,'FFTS'),(63,'OP'),(64,'UDF'),(65,'HICAID'),(66,'TSYNC'),
  (67,'AUDIO'),(68,'TPRT'),(69,'ASCENDCKERNEL'),(70,'ASYS'),(71,'ATRACE'),(72,'RTC'),
  (73,'SYSMONITOR'),(74,'AMP'),(75,'ADETECT'),(76,'MBUFF'),(77,'CUSTOM');

-- [analysis-tables]
-- ASCEND_PROFILER_OUTPUT/analysis.db, a file of its own beside the profile (DB_SPEC.md §3.11,
-- torch_npu's derived tables; src/db/analysis_db.cc writes it, docs/db_gpuprof_tables.md says how
-- each column is filled). Not created in the profile DB.
CREATE TABLE IF NOT EXISTS StepTraceTime (deviceId INTEGER, step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, overlapped NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC);
CREATE TABLE IF NOT EXISTS CommAnalyzerTime (hccl_op_name TEXT, group_name TEXT, start_timestamp NUMERIC, elapse_time NUMERIC, transit_time NUMERIC, wait_time NUMERIC, synchronization_time NUMERIC, idle_time NUMERIC, step TEXT, type TEXT);
CREATE TABLE IF NOT EXISTS CommAnalyzerBandwidth (hccl_op_name TEXT, group_name TEXT, transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, large_packet_ratio NUMERIC, package_size NUMERIC, count NUMERIC, total_duration NUMERIC, step TEXT, type TEXT);
CREATE TABLE IF NOT EXISTS CommAnalyzerMatrix (hccl_op_name TEXT, group_name TEXT, src_rank TEXT, dst_rank TEXT, transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, step TEXT, type TEXT, op_name TEXT);
