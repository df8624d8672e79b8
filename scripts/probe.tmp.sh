export PATH=$PATH:/usr/local/cuda/bin
GIO_GPU_STAGES="tests" bash scripts/gpu-check.sh $OUT/t > /dev/null 2>&1; grep -E "PASS|FAIL" $OUT/t/gpu-check.log | grep -v "^    PASS"
mkdir -p /tmp/p; gcc -std=c11 -O2 -Iinclude -c src/error.c -o /tmp/p/e.o; gcc -std=c11 -O2 -Iinclude -c src/clock.c -o /tmp/p/c.o
nvcc -std=c++17 -arch=sm_90 -O2 -Iinclude bench/bench_gpu_cmdrate.cu /tmp/p/e.o /tmp/p/c.o -o /tmp/p/cmd
nvcc -std=c++17 -arch=sm_90 -O2 -Iinclude bench/bench_kv_restore.cu /tmp/p/e.o /tmp/p/c.o -ldl -o /tmp/p/kv
C="timeout 100 /tmp/p/cmd --seconds 0.1"
$C --io-sms 2,8,32 --exec-sms 16,32 --rings hbm 2>&1 | grep -E "^\| (hbm|host)"
$C --io-sms 2 --exec-sms 16 --rings hbm --inflight 1 2>&1 | grep -E "^\| (hbm|host)"
$C --io-sms 2 --exec-sms 16 --rings hbm --inflight 8 2>&1 | grep -E "^\| (hbm|host)"
$C --io-sms 32,64 --exec-sms 64 --rings hbm,host 2>&1 | grep -E "^\| (hbm|host)"
$C --io-sms 8,32 --exec-sms 16,32 --rings host 2>&1 | grep -E "^\| (hbm|host)"
K="timeout 100 /tmp/p/kv --tokens 32K --reps 1 --paths giouring,gather --gather-sms 8"
$K --gio-sms 8,2 2>&1 | grep -E "^\| (giou|gath|bulk)"
$K --gio-sms 8 --exec-sms 32 --exec-warps 8 2>&1 | grep -E "^\| (giou)"
$K --gio-sms 8 --queues 512 --exec-sms 32 --exec-warps 16 2>&1 | grep -E "^\| (giou)"
