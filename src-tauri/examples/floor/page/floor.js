// The floor page: one module script that puts one row in the DOM, as the
// app's runs list does, and notes when (tests/app/perf.py reads the mark).
const row = document.createElement('div');
row.dataset.testid = 'run-row';
row.textContent = 'floor';
document.getElementById('root').append(row);
performance.mark('weft-first-row');
