// A confirmation before an action that changes something: a modal <dialog> (focus moves into
// it, Escape cancels). Resolves true when the user confirms.
import { el } from './format.js';

export function confirmAction(title, detail, confirmLabel) {
  return new Promise((resolve) => {
    const dialog = el('dialog', { 'aria-labelledby': 'confirm-title' },
      el('h2', { id: 'confirm-title' }, title), el('p', {}, detail));
    const cancel = el('button', { type: 'button' }, 'Cancel');
    const confirm = el('button', { type: 'button', class: 'primary' }, confirmLabel);
    dialog.append(el('p', { class: 'toolbar' }, cancel, confirm));
    const finish = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    cancel.addEventListener('click', () => finish(false));
    confirm.addEventListener('click', () => finish(true));
    dialog.addEventListener('cancel', (event) => { event.preventDefault(); finish(false); });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}
