// Notices to the person: every failure is shown, and so is what a change did (toast, attempt).

// One notice at a time, the newest replacing the last: a stack of them covered the page. On a
// wide screen it sits in the header's empty middle, on a narrow one at the bottom (styles.css).
export function toast(message, kind = 'error') {
  const item = document.createElement('div');
  item.className = `toast toast-${kind}`;
  item.textContent = message;
  const close = document.createElement('button');
  close.type = 'button';
  close.className = 'toast-close';
  close.setAttribute('aria-label', 'Dismiss');
  close.textContent = '×';
  close.addEventListener('click', () => item.remove());
  item.append(close);
  document.querySelector('#toasts').replaceChildren(item);
  setTimeout(() => fadeOut(item), kind === 'error' ? 8000 : 4000);
}

function fadeOut(item) {
  if (!item.isConnected) return;
  if (window.matchMedia('(prefers-reduced-motion: reduce)').matches) {
    item.remove();
    return;
  }
  const fading = item.animate([{ opacity: 1 }, { opacity: 0 }], {
    duration: 400,
    fill: 'forwards',
  });
  fading.finished.then(() => item.remove()).catch(() => item.remove());
}

export async function attempt(work, { button } = {}) {
  if (button) button.disabled = true;
  try {
    return await work();
  } catch (error) {
    toast(error?.message ?? String(error));
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

window.addEventListener('unhandledrejection', (event) => {
  toast(event.reason?.message ?? 'Something went wrong');
});
