/*
 * The intrusive list: unlink reports exactly when a list became empty,
 * which is what lets cancel clear an occupancy bit without a slot number.
 */
#include <criterion/criterion.h>

#include "list.h"

Test(core_list, unlink_reports_empty_list)
{
    struct tw_link head;
    struct tw_timer a, b, c;

    tw__list_init(&head);
    cr_assert(tw__list_empty(&head));
    tw__list_push_back(&head, &a.link);
    tw__list_push_back(&head, &b.link);
    tw__list_push_back(&head, &c.link);
    cr_assert_eq(tw__list_timer(head.next), &a);
    cr_assert_null(tw__list_unlink(&b.link));
    cr_assert_null(b.link.next);
    cr_assert_null(tw__list_unlink(&a.link));
    cr_assert_eq(tw__list_unlink(&c.link), &head);
    cr_assert(tw__list_empty(&head));
}

Test(core_list, splice_keeps_order)
{
    struct tw_link x, y;
    struct tw_timer t[4];

    tw__list_init(&x);
    tw__list_init(&y);
    tw__list_splice_back(&x, &y);
    cr_assert(tw__list_empty(&x));
    tw__list_push_back(&x, &t[0].link);
    tw__list_push_back(&y, &t[1].link);
    tw__list_push_back(&y, &t[2].link);
    tw__list_splice_back(&x, &y);
    cr_assert(tw__list_empty(&y));
    tw__list_push_back(&x, &t[3].link);
    int i = 0;
    for (struct tw_link *n = x.next; n != &x; n = n->next, i++)
        cr_assert_eq(tw__list_timer(n), &t[i]);
    cr_assert_eq(i, 4);
    cr_assert_eq(x.prev, &t[3].link);
}
