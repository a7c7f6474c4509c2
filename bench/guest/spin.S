/* A guest that does countable work: a multiboot kernel that counts down a loop
 * and writes one byte to COM1 every SPIN_ITERATIONS iterations, forever. The
 * growth of the serial log (a file on the host) is the guest's throughput. */
#ifndef SPIN_ITERATIONS
#define SPIN_ITERATIONS 2000000
#endif
        .section .text
        .code32
        .align 4
        .long 0x1BADB002                /* multiboot magic */
        .long 0x00000000                /* flags: nothing requested */
        .long -(0x1BADB002)             /* checksum */

        .globl _start
_start:
        cli
        mov $0x3f8, %dx
1:      mov $SPIN_ITERATIONS, %ecx
2:      dec %ecx
        jnz 2b
        mov $'.', %al
        out %al, %dx
        jmp 1b
