# RecordCollector: ordering, exactly-once delivery under concurrent producers and a drainer,
# lifetimes (thread exit, collector destruction), the cap, fork. Also run under TSan (concurrency).
gpuprof_add_gtest(NAME trace_buffer_test SOURCES trace_buffer_test.cc LIBS gpuprof::trace
                  LABELS "unit;concurrency")
