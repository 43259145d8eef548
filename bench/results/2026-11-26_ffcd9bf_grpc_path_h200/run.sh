set -u
B=.bundle/gpb/grpc_path_bench
export LD_LIBRARY_PATH=$PWD/.bundle/gpb/lib
nproc
for st in callback queues:4 queues:8 queues:16; do
  api=${st%%:*}; th=${st#*:}; [ "$api" = callback ] && th=1
  $B serve --api $api --threads $th --address 127.0.0.1:9711 & sp=$!
  sleep 1
  for lt in callback:1 queues:4 queues:8; do
    la=${lt%%:*}; lth=${lt#*:}
    for ch in 16 64; do
      $B load --api $la --threads $lth --channels $ch --concurrency 64 --address 127.0.0.1:9711 | sed "s/^/server=$st /"
    done
  done
  $B load --api queues --threads 1 --channels 1 --concurrency 1 --address 127.0.0.1:9711 | sed "s/^/server=$st /"
  $B load --api callback --threads 1 --channels 1 --concurrency 1 --address 127.0.0.1:9711 | sed "s/^/server=$st /"
  kill $sp; wait $sp 2>/dev/null
done
