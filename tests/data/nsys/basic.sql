-- A small Nsight Systems SQLite export written by hand to the documented
-- schema ("SQLite Export Schema Reference", nsys 2024.6, export schema
-- 3.16: table and column names, types, enum values), NOT a file written by
-- nsys (nsys needs a GPU machine). Only the columns the importer reads, or
-- that show it ignores what it does not know, are here. tests/importers/
-- nsys_test.cc derives the expected tree from the comments below.
--
-- One process, pid 100 (globalPid = 100 * 0x1000000 = 1677721600):
--   main thread tid 100 (globalTid 1677721700), named "python3"
--   tid 101 (globalTid 1677721701), named "loader"
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES
  (1, 'python3'), (2, 'loader'),
  (3, 'cudaLaunchKernel_v7000'), (4, 'cudaMemcpyAsync_v3020'), (5, 'cudaMemsetAsync_v3020'),
  (6, 'cudaStreamSynchronize_v3020'), (17, 'cudaGetDevice_v3020'),
  (7, 'void gemm<float>(float*, int)'), (8, 'gemm'),
  (9, 'relu_kernel(float*)'), (10, 'relu_kernel'),
  (11, 'forward'),
  (12, 'main'), (13, 'launch_relu'), (14, 'sample_leaf'),
  (15, '/usr/bin/python3'), (16, 'libfoo.so'), (18, 'libcudart.so.12'), (19, 'cudaLaunchKernel');

CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
INSERT INTO ThreadNames VALUES (1, 0, 1677721700), (2, 0, 1677721701);

CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.16.1');

CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34, 'NvtxMark', 'NvtxMark'), (59, 'NvtxPushPopRange', 'NvtxPushPopRange'),
  (60, 'NvtxStartEndRange', 'NvtxStartEndRange'), (75, 'NvtxDomainCreate', 'NvtxDomainCreate');

-- NVTX on the main thread:
--   push/pop "step"     1000..9000  (8000 ns; "forward" nested: 5000 its own)
--   push/pop "forward"  2000..5000  (3000 ns; text by registered string 11)
--   mark "checkpoint"   2500        (inside forward)
--   start/end "epoch"    500..9500 and 9000..9800: union 500..9800 = 9300 ns, 2 instances
-- on "loader": domain 7 named "mylib"; push/pop "io" in it, 6000..7000 → "mylib::io"
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, textId, domainId) VALUES
  (1000, 9000, 59, 'step', 1677721700, NULL, 0),
  (2000, 5000, 59, NULL, 1677721700, 11, 0),
  (2500, NULL, 34, 'checkpoint', 1677721700, NULL, 0),
  (500, 9500, 60, 'epoch', 1677721700, NULL, 0),
  (9000, 9800, 60, 'epoch', 1677721700, NULL, 0),
  (0, NULL, 75, 'mylib', 1677721701, NULL, 7),
  (6000, 7000, 59, 'io', 1677721701, NULL, 7);

-- CUDA runtime calls (correlationId → the GPU activity below):
--   1 cudaLaunchKernel       main 2100  in forward  → gemm 10000..10400
--   2 cudaLaunchKernel       main 2300  in forward  → gemm 10500..10700
--   3 cudaMemcpyAsync        main 5500  in step     → HtoD 4096 B 11000..11100
--   4 cudaMemsetAsync        main  800  no range    → 512 B 11200..11250
--   5 cudaStreamSynchronize  main 8000  in step     → stream sync 12000..12300
--   6 cudaGetDevice          main  100              (no GPU work: no node)
--   7 cudaLaunchKernel       loader 6500 in mylib::io, backtrace 1:
--       main (python3) → launch_relu (libfoo.so) → cudaLaunchKernel (libcudart)
--                                                 → relu_kernel 13000..13050
-- GPU work without a runtime call: kernel corr 99 (relu_kernel 14000..14010),
-- DtoH copy corr 98 (2048 B 14100..14130) → <gpu unknown>
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, "end" INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (2100, 2200, 1, 1677721700, 1, 3, 0, NULL),
  (2300, 2400, 1, 1677721700, 2, 3, 0, NULL),
  (5500, 5600, 1, 1677721700, 3, 4, 0, NULL),
  (800, 850, 1, 1677721700, 4, 5, 0, NULL),
  (8000, 12400, 1, 1677721700, 5, 6, 0, NULL),
  (100, 110, 1, 1677721700, 6, 17, 0, NULL),
  (6500, 6600, 1, 1677721701, 7, 3, 0, 1);

CREATE TABLE CUDA_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL,
  unresolved INTEGER, originalIP INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
INSERT INTO CUDA_CALLCHAINS VALUES (1, 19, 18, 0, 4096, 0), (1, 13, 16, 0, 8192, 1), (1, 12, 15, 0, 12288, 2);

-- gemm: grid 4x2x1 block 128x1x1 and grid 8x1x1 block 256x1x1, 32 registers, 1024 B static shared
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (10000, 10400, 0, 1, 7, 1, 1677721600, 7, 8, 32, 4, 2, 1, 128, 1, 1, 1024, 0, 0, 0, 1),
  (10500, 10700, 0, 1, 7, 2, 1677721600, 7, 8, 32, 8, 1, 1, 256, 1, 1, 1024, 0, 0, 0, 2),
  (13000, 13050, 0, 1, 7, 7, 1677721600, 9, 10, 16, 1, 1, 1, 64, 1, 1, 0, 0, 0, 0, 3),
  (14000, 14010, 0, 1, 7, 99, 1677721600, 9, 10, 16, 1, 1, 1, 64, 1, 1, 0, 0, 0, 0, 4);

-- copyKind: ENUM_CUDA_MEMCPY_OPER (1 Host-to-Device, 2 Device-to-Host)
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
  (11000, 11100, 0, 1, 7, 3, 1677721600, 4096, 1, 0, 2),
  (14100, 14130, 0, 1, 7, 98, 1677721600, 2048, 2, 2, 0);

CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (11200, 11250, 0, 1, 7, 4, 1677721600, 0, 512, 2);

-- syncType: ENUM_CUPTI_SYNC_TYPE (3 Stream sync)
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (12000, 12300, 0, 1, 7, 5, 1677721600, 3, 0);

-- CPU samples (stackDepth 0 = the leaf):
--   1 main   2150: main (python3) → sample_leaf (libfoo.so), inside step → forward
--   2 main   9500: main, after step ended
--   3 loader 6600: no call chain rows, inside mylib::io
CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL, cpu INTEGER,
  threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL);
INSERT INTO COMPOSITE_EVENTS VALUES (1, 2150, 0, 1, 1677721700, 0), (2, 9500, 0, 1, 1677721700, 0),
  (3, 6600, 1, 1, 1677721701, 0);
CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL,
  kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER, originalIP INTEGER,
  unwindMethod INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
INSERT INTO SAMPLING_CALLCHAINS (id, symbol, module, stackDepth) VALUES
  (1, 14, 16, 0), (1, 12, 15, 1),
  (2, 12, 15, 0);
