// A subtle flash of a changed value: green up, red down. Web Animations, not class toggling:
// restarting a CSS animation forces a layout per row.

const FLASH = {
  up: 'rgba(52, 211, 153, 0.22)',
  down: 'rgba(248, 113, 113, 0.22)',
  neutral: 'rgba(45, 212, 191, 0.18)',
};

export function flash(element, direction = 'neutral') {
  element?.animate([{ backgroundColor: FLASH[direction] }, { backgroundColor: 'transparent' }], {
    duration: 900,
    easing: 'ease-out',
  });
}
