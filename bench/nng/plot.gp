# The plot of an nng-bench run (bench/nng/bench.sh): stock against patched
# nng as the number of pending timeouts grows, one queue and nng's default.
# Columns of table.py's --dat file: 1 queues, 2 n, then for each metric
# stock and patched: 3-4 cpu_per_wake_us, 5-6 sleep_p50, 7-8 sleep_p99,
# 9-10 sleep_max, 11-12 burst_p50, 13-14 burst_p99, 15-16 burst_max,
# 17-18 arm_cancel_ns, 19-20 bytes_per_aio. Blocks: index 0 the first
# queue setting in the file (0, nng's default), index 1 one queue.
#   gnuplot -e "dat='plot.dat'; png='nng.png'; sub='how it was run'" plot.gp
set terminal pngcairo noenhanced size 1200,420 font 'DejaVu Sans,10'
set output png
set datafile missing 'NaN'
set logscale xy
set grid
set format y '%g'
set xlabel 'aios pending (long timeouts, random order)'
set key top left font ',9'
set xrange [500:200000]
x(n) = n > 0 ? n : NaN
if (!exists('sub')) sub = ''
set multiplot layout 1,3 title 'nng 1.12.0 aio timers: stock (red) against patched on timewheel (blue); solid one queue, dashed default queues; lower is better'.(sub eq '' ? '' : "\n".sub) font ',11'
set title 'CPU per expire-thread wake-up, us'
plot dat index 1 using (x($2)):3 with linespoints lw 2 lc rgb '#c0392b' title 'stock, 1 queue', \
     dat index 1 using (x($2)):4 with linespoints lw 2 lc rgb '#2471a3' title 'patched, 1 queue', \
     dat index 0 using (x($2)):3 with linespoints dt 2 lc rgb '#c0392b' title 'stock, default', \
     dat index 0 using (x($2)):4 with linespoints dt 2 lc rgb '#2471a3' title 'patched, default'
set title 're-armed 1 ms sleep: lateness p99, ms'
plot dat index 1 using (x($2)):7 with linespoints lw 2 lc rgb '#c0392b' notitle, \
     dat index 1 using (x($2)):8 with linespoints lw 2 lc rgb '#2471a3' notitle, \
     dat index 0 using (x($2)):7 with linespoints dt 2 lc rgb '#c0392b' notitle, \
     dat index 0 using (x($2)):8 with linespoints dt 2 lc rgb '#2471a3' notitle
set title 'burst of 1,000 due at once: last one late by, ms'
plot dat index 1 using (x($2)):15 with linespoints lw 2 lc rgb '#c0392b' notitle, \
     dat index 1 using (x($2)):16 with linespoints lw 2 lc rgb '#2471a3' notitle, \
     dat index 0 using (x($2)):15 with linespoints dt 2 lc rgb '#c0392b' notitle, \
     dat index 0 using (x($2)):16 with linespoints dt 2 lc rgb '#2471a3' notitle
unset multiplot
